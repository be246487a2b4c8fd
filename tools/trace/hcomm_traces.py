"""Readers for the two trace files libhcomm writes (docs: notes/trace_formats.md).

Shared by hcomm-visualize (profiles, HCOMM_PROFILE=1/2) and hcomm-diagnose (flight-recorder
dumps). Standard library only. Every function that reads input raises TraceError, whose text
names the file and what is wrong, for input that is not what libhcomm writes; the tools turn it
into one line on stderr and exit status 2, never a traceback. Events that are individually
malformed inside an otherwise valid profile are left out and counted in Profile.warnings.

All times are microseconds on the clock aligned across ranks, as in the files.
"""

import glob
import json
import math
import os
from collections import namedtuple
from dataclasses import dataclass, field

PROFILE_FORMAT = "hcomm-profile"
DUMP_FORMAT = "hcomm-flight-recorder"
KNOWN_VERSION = 1
P2P_SEQ_BASE = 1 << 63  # send/recv keys are >= 2^63; collectives count 1, 2, ...
ENTRY_STATES = ("enqueued", "started", "completed", "failed")
HCOMM_CATEGORIES = ("collective", "p2p", "link", "transfer", "flow")
MAX_RANK = 1 << 31      # pids and ranks at or above it are junk, not ranks


def resource_path(name):
    """A file installed next to this module (report_template.html)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), name)


class TraceError(Exception):
    """Input that is not an hcomm trace; str() is the full message, file name first."""


# ---------------------------------------------------------------------------------------------
# Records

@dataclass
class Op:
    """One operation of one rank: an "X" event of tid 0 or a matched "b"/"e" pair."""
    rank: int
    communicator: str
    seq: int
    op: str
    cat: str
    bytes: int
    count: int
    dtype: str
    ts: float
    dur: float
    status: str
    comm_size: int      # ranks of its communicator (0 when no field says)
    overlapped: bool    # written as an async pair: it overlapped another operation
    args: dict

    @property
    def collective(self):
        return self.cat != "p2p" and 0 <= self.seq < P2P_SEQ_BASE

    @property
    def end(self):
        return self.ts + self.dur

    @property
    def ok(self):
        return self.status in ("ok", "")


# The other records are read-only tuples; times in us, None where the file has null.
LinkEvent = namedtuple("LinkEvent", "rank ts name args")
Counter = namedtuple("Counter", "rank ts name values")     # values: series -> number
# A level-2 send or receive of one operation (tid 1)
Transfer = namedtuple("Transfer", "rank ts dur name op seq peer bytes")
# A send-to-receive arrow; dst_rank and end_ts are None when its "f" event is missing
Flow = namedtuple("Flow", "id src_rank start_ts dst_rank end_ts")


@dataclass
class RankInfo:
    rank: int
    file: str
    host: str = ""
    world_size: int = 0
    level: int = 0
    clock_offset_us: float = 0.0
    events_recorded: object = None   # None: the file does not say
    events_dropped: object = None
    communicators: list = field(default_factory=list)


@dataclass
class Profile:
    """Everything of a set of profile files; lists are sorted by (rank, ts)."""
    ranks: dict = field(default_factory=dict)        # rank -> RankInfo
    ops: list = field(default_factory=list)
    links: list = field(default_factory=list)
    counters: list = field(default_factory=list)
    transfers: list = field(default_factory=list)
    flows: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    def world_size(self):
        sizes = [info.world_size for info in self.ranks.values() if info.world_size]
        return max(sizes) if sizes else len(self.ranks)


# A flight-recorder entry, its fields as in the file (collective: from the file, else seq < 2^63)
Entry = namedtuple("Entry", "seq kind collective count bytes datatype redop root peer tag "
                            "algorithm state enqueued_us started_us completed_us status")
# One communicator of a dump: rank inside it, entries oldest first
CommDump = namedtuple("CommDump", "id rank size buffer_size recorded entries")
# One dump file: rank is the world rank
Dump = namedtuple("Dump", "file rank world_size host pid reason reason_detail dumped_at_us "
                          "clock_offset_us communicators")


# ---------------------------------------------------------------------------------------------
# Reading JSON

def read_json(path):
    """The parsed JSON of path; TraceError for a missing, unreadable or non-JSON file."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TraceError(f"{path}: is a directory, not a trace file") from None
    except PermissionError:
        raise TraceError(f"{path}: cannot read it (permission denied)") from None
    except OSError as error:
        raise TraceError(f"{path}: cannot read it ({error.strerror or error})") from None
    if not data.strip():
        raise TraceError(f"{path}: empty file, not an hcomm trace file")
    try:
        # NaN and Infinity are not JSON: read as null, as a browser's JSON.parse would refuse
        return json.loads(data.decode("utf-8"), parse_constant=lambda name: None)
    except UnicodeDecodeError:
        raise TraceError(f"{path}: not UTF-8 text, so not an hcomm trace file") from None
    except json.JSONDecodeError as error:
        raise TraceError(f"{path}: not valid JSON (line {error.lineno} column {error.colno}: "
                         f"{error.msg}); was the file cut short?") from None
    except RecursionError:
        raise TraceError(f"{path}: JSON nested too deeply to be an hcomm trace file") from None


def _looks_like_hcomm_events(events):
    """True when some event of a Chrome trace carries hcomm's categories or arguments."""
    for event in events[:10000]:
        if isinstance(event, dict):
            args = event.get("args")
            if event.get("cat") in HCOMM_CATEGORIES and event.get("ph") in ("X", "b", "i", "s"):
                return True
            if isinstance(args, dict) and "communicator" in args and "seq" in args:
                return True
    return False


def classify(doc, path):
    """"profile" or "dump" for a parsed hcomm file; TraceError for any other JSON."""
    if isinstance(doc, dict) and doc.get("format") == DUMP_FORMAT:
        return "dump"
    if isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        other = doc.get("otherData")
        declared = other.get("format") if isinstance(other, dict) else None
        if declared == PROFILE_FORMAT:
            return "profile"
        if declared is None and _looks_like_hcomm_events(doc["traceEvents"]):
            return "profile"   # a merged file: events of several ranks without hcomm's header
        if declared is not None:
            raise TraceError(f"{path}: a Chrome trace of format {declared!r}, not an hcomm "
                             f"profile (otherData.format {PROFILE_FORMAT!r})")
        raise TraceError(f"{path}: a Chrome trace without hcomm events, not an hcomm profile")
    if isinstance(doc, list) and _looks_like_hcomm_events(doc):
        return "profile"       # the JSON array form of the Trace Event format
    raise TraceError(f"{path}: not an hcomm file (expected a profile whose otherData.format is "
                     f"{PROFILE_FORMAT!r} or a flight-recorder dump whose format is "
                     f"{DUMP_FORMAT!r})")


def _check_version(doc, path, warnings):
    version = doc.get("version") if isinstance(doc, dict) else None
    if isinstance(version, int) and version > KNOWN_VERSION:
        warnings.append(f"{path}: format version {version}; this tool knows version "
                        f"{KNOWN_VERSION}, reading it anyway")


# ---------------------------------------------------------------------------------------------
# Small conversions that never raise

def num(value, default=0.0):
    """value as a finite float, default for anything else (bools included)."""
    if type(value) is float or type(value) is int:   # not bool, a subclass of int
        return float(value) if math.isfinite(value) else default
    return default


def integer(value, default=0):
    """value as an int (a finite float truncated), default for anything else (bools included)."""
    if type(value) is int:
        return value
    return int(value) if type(value) is float and math.isfinite(value) else default


def text(value, default=""):
    return value if type(value) is str else default


# ---------------------------------------------------------------------------------------------
# Profiles

def load_profiles(paths):
    """A Profile of the given files (one per rank, or files holding several ranks).

    Events are grouped by their pid, which is the rank. A rank found in two files is an error:
    its operations would count twice."""
    profile = Profile()
    if not paths:
        raise TraceError("no profile files given")
    for path in paths:
        doc = read_json(path)
        if classify(doc, path) != "profile":
            raise TraceError(f"{path}: a flight-recorder dump, not a profile "
                             f"(hcomm-diagnose reads dumps)")
        _check_version(doc, path, profile.warnings)
        _add_profile_file(profile, doc, path)
    for records in (profile.ops, profile.links, profile.counters, profile.transfers):
        records.sort(key=lambda record: (record.rank, record.ts))
    return profile


def _add_profile_file(profile, doc, path):
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    other = doc.get("otherData") if isinstance(doc, dict) else None
    other = other if isinstance(other, dict) else {}
    header_rank = integer(other.get("rank"), -1)
    header_rank = header_rank if 0 <= header_rank < MAX_RANK else None
    default_rank = header_rank if header_rank is not None else 0   # for events without pid
    ranks_here = _ranks_of(events, default_rank)
    for rank in ranks_here:
        if rank in profile.ranks:
            raise TraceError(f"{path}: rank {rank} is also in {profile.ranks[rank].file}; "
                             f"pass each rank's profile once")
        profile.ranks[rank] = RankInfo(rank=rank, file=path)
    if header_rank is not None:
        profile.ranks.setdefault(header_rank, RankInfo(rank=header_rank, file=path))
        _apply_header(profile.ranks[header_rank], other)
    _add_events(profile, events, default_rank, path)


def _event_rank(event, default_rank):
    """The rank of an event (its pid); None for a pid no rank can have."""
    rank = integer(event.get("pid"), default_rank)
    return rank if 0 <= rank < MAX_RANK else None


def _ranks_of(events, default_rank):
    """The pids (ranks) of the events that are not metadata."""
    ranks = {_event_rank(e, default_rank) for e in events
             if isinstance(e, dict) and e.get("ph") != "M"}
    return sorted(ranks - {None})


def _apply_header(info, other):
    info.host = text(other.get("host"))
    info.world_size = integer(other.get("world_size"))
    info.level = integer(other.get("level"))
    info.clock_offset_us = num(other.get("clock_offset_us"))
    if "events_recorded" in other:
        info.events_recorded = integer(other.get("events_recorded"))
    if "events_dropped" in other:
        info.events_dropped = integer(other.get("events_dropped"))
    comms = other.get("communicators")
    if isinstance(comms, list):
        info.communicators = [c for c in comms if isinstance(c, dict)]


def _comm_sizes(profile):
    """communicator id -> size, from every header read so far."""
    sizes = {}
    for info in profile.ranks.values():
        for comm in info.communicators:
            if integer(comm.get("size")):
                sizes[text(comm.get("id"))] = integer(comm.get("size"))
    return sizes


def _add_events(profile, events, default_rank, path):
    """Adds the events of one file; pairs "b"/"e" by (rank, id, name), first begun first."""
    begun, flows, comm_sizes = {}, {}, _comm_sizes(profile)
    skipped, unbegun = 0, []
    for event in events:
        rank = _event_rank(event, default_rank) if isinstance(event, dict) else None
        phase = event.get("ph") if rank is not None else None
        if phase in ("b", "e"):
            key = (rank, str(event.get("id")), str(event.get("name")))
            if phase == "b":
                begun.setdefault(key, []).append(event)
                continue
            if not begun.get(key):
                unbegun.append(key)
                continue
            ok = _add_pair(profile, rank, begun[key].pop(0), event, comm_sizes)
        elif phase == "M":
            ok = _apply_metadata(profile, rank, event)
        elif phase == "X":
            ok = _add_complete(profile, rank, event, comm_sizes)
        elif phase in ("i", "I"):
            ok = _add_instant(profile, rank, event)
        elif phase == "C":
            ok = _add_counter(profile, rank, event)
        elif phase in ("s", "f"):
            ok = _add_flow(flows, rank, event)
        else:
            ok = rank is not None   # another phase: not drawn, not wrong
        skipped += not ok
    profile.flows.extend(Flow(i, *ends) for i, ends in flows.items())
    _warn_unmatched(profile.warnings, path, unbegun, "an end but no begin")
    _warn_unmatched(profile.warnings, path, [k for k, rest in begun.items() for _ in rest],
                    "a begin but no end (still running when the profile was written?)")
    if skipped:
        profile.warnings.append(f"{path}: {skipped} malformed events left out")


def _warn_unmatched(warnings, path, keys, what):
    if keys:
        rank, ident, name = keys[0]
        warnings.append(f"{path}: {len(keys)} async operation{'s' * (len(keys) > 1)} with "
                        f"{what}, left out (first: rank {rank} {name} {ident})")


def _add_pair(profile, rank, begin, end, comm_sizes):
    start, stop = num(begin.get("ts"), None), num(end.get("ts"), None)
    op = None if start is None or stop is None else _make_op(rank, begin, start, stop - start,
                                                            True, comm_sizes)
    if op:
        profile.ops.append(op)
    return op is not None


def _add_counter(profile, rank, event):
    ts, args = num(event.get("ts"), None), event.get("args")
    if ts is None or not isinstance(args, dict):
        return False
    profile.counters.append(Counter(rank, ts, text(event.get("name")), args))
    return True


def _apply_metadata(profile, rank, event):
    """Takes the host from a process_name of "rank 0 (hostname)" when the header has none."""
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    label = text(args.get("name"))
    info = profile.ranks.get(rank)
    if event.get("name") == "process_name" and info and not info.host and label.endswith(")"):
        info.host = label[label.find("(") + 1:-1]
    return True


def _add_complete(profile, rank, event, comm_sizes):
    """Adds an "X" event as an Op or a Transfer; False when it is malformed."""
    ts, dur = num(event.get("ts"), None), num(event.get("dur"), None)
    if ts is None or dur is None:
        return False
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    if event.get("cat") == "transfer" or (integer(event.get("tid")) == 1
                                          and "communicator" not in args):
        profile.transfers.append(Transfer(
            rank, ts, dur, text(event.get("name")), text(args.get("op")),
            integer(args.get("seq"), -1), integer(args.get("peer"), -1),
            integer(args.get("bytes"))))
        return True
    if event.get("cat") not in ("collective", "p2p") and "seq" not in args:
        return True   # another tool's event in a merged file: not ours to judge
    op = _make_op(rank, event, ts, dur, False, comm_sizes)
    if op:
        profile.ops.append(op)
    return op is not None


def _make_op(rank, event, ts, dur, overlapped, comm_sizes):
    """An Op of an "X" event or a "b" event with its duration; None when args lack a seq."""
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    seq = integer(args.get("seq"), None)
    if seq is None or dur < 0:
        return None
    comm = text(args.get("communicator"), text(args.get("Process Group Name")))
    size = integer(args.get("Group size")) or comm_sizes.get(comm, 0)
    return Op(rank=rank, communicator=comm, seq=seq,
              op=text(args.get("op"), text(event.get("name"), "?")),
              cat=text(event.get("cat"), "collective"),
              bytes=integer(args.get("bytes")), count=integer(args.get("count")),
              dtype=text(args.get("datatype"), text(args.get("dtype"))),
              ts=ts, dur=dur, status=text(args.get("status"), "ok"),
              comm_size=size, overlapped=overlapped, args=args)


def _add_instant(profile, rank, event):
    ts = num(event.get("ts"), None)
    if ts is None:
        return False
    if event.get("cat") == "link":
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        profile.links.append(LinkEvent(rank, ts, text(event.get("name"), "?"), args))
    return True


def _add_flow(flows, rank, event):
    ident, ts = str(event.get("id")), num(event.get("ts"), None)
    if ts is None:
        return False
    if event.get("ph") == "s":
        flows.setdefault(ident, [rank, ts, None, None])   # the fields of Flow after id
    elif ident in flows:
        flows[ident][2:] = [rank, ts]
    return True


# ---------------------------------------------------------------------------------------------
# Flight-recorder dumps

def dump_paths(arguments):
    """Files named, plus every hcomm_trace.*.json inside named directories, in order."""
    paths = []
    for argument in arguments:
        if os.path.isdir(argument):
            found = sorted(glob.glob(os.path.join(argument, "hcomm_trace.*.json")))
            if not found:
                raise TraceError(f"{argument}: no hcomm_trace.*.json files in this directory")
            paths.extend(found)
        else:
            paths.append(argument)
    if not paths:
        raise TraceError("no dump files given")
    return paths


def load_dumps(arguments):
    """(dumps, warnings): one Dump per file of dump_paths(arguments).

    A world rank dumped twice (two files) keeps its latest dump (by dumped_at_us); the other
    is named in the warnings."""
    by_rank, warnings = {}, []
    for path in dump_paths(arguments):
        doc = read_json(path)
        if classify(doc, path) != "dump":
            raise TraceError(f"{path}: a profile, not a flight-recorder dump "
                             f"(hcomm-visualize reads profiles)")
        _check_version(doc, path, warnings)
        dump = parse_dump(doc, path)
        previous = by_rank.get(dump.rank)
        if previous is not None:
            newer = max((previous, dump), key=lambda d: num(d.dumped_at_us, -1.0))
            older = dump if newer is previous else previous
            warnings.append(f"rank {dump.rank} dumped twice: using {newer.file}, "
                            f"ignoring {older.file}")
            dump = newer
        by_rank[dump.rank] = dump
    return [by_rank[rank] for rank in sorted(by_rank)], warnings


def _require(container, key, kind, path, where):
    """container[key] checked against kind (a type or tuple); TraceError naming where."""
    if not isinstance(container, dict) or key not in container:
        raise TraceError(f"{path}: {where}: missing {key!r}")
    value = container[key]
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        raise TraceError(f"{path}: {where}: {key!r} is {value!r}, not "
                         f"{getattr(kind, '__name__', 'a valid value')}")
    return value


def _require_rank(container, key, limit, path, where):
    """container[key], an int in [0, limit) (for "size": [1, limit))."""
    value = _require(container, key, int, path, where)
    if not (key == "size") <= value < limit:
        raise TraceError(f"{path}: {where}: {key!r} is {value}, outside [{key == 'size':d}, "
                         f"{limit})")
    return value


def parse_dump(doc, path):
    """A Dump of a parsed dump document; TraceError naming the first field that is wrong."""
    rank = _require_rank(doc, "rank", MAX_RANK, path, "top level")
    comms = _require(doc, "communicators", list, path, "top level")
    dump = Dump(file=path, rank=rank, world_size=integer(doc.get("world_size")),
                host=text(doc.get("host")), pid=integer(doc.get("pid")),
                reason=text(doc.get("reason")), reason_detail=text(doc.get("reason_detail")),
                dumped_at_us=num(doc.get("dumped_at_us"), None),
                clock_offset_us=num(doc.get("clock_offset_us")), communicators=[])
    for index, comm in enumerate(comms):
        where = f"communicators[{index}]"
        entries = _require(comm, "entries", list, path, where)
        size = _require_rank(comm, "size", MAX_RANK + 1, path, where)
        dump.communicators.append(CommDump(
            id=str(_require(comm, "id", (str, int), path, where)),
            rank=_require_rank(comm, "rank", size, path, where), size=size,
            buffer_size=integer(comm.get("buffer_size")),
            recorded=integer(comm.get("recorded"), len(entries)),
            entries=[_parse_entry(e, path, f"{where}.entries[{i}]")
                     for i, e in enumerate(entries)]))
    return dump


def _parse_entry(raw, path, where):
    seq = _require(raw, "seq", int, path, where)
    state = _require(raw, "state", str, path, where)
    if state not in ENTRY_STATES:
        raise TraceError(f"{path}: {where}: state {state!r} is not one of "
                         f"{', '.join(ENTRY_STATES)}")
    collective = raw.get("collective")
    if not isinstance(collective, bool):
        collective = 0 <= seq < P2P_SEQ_BASE
    return Entry(seq=seq, kind=_require(raw, "kind", str, path, where), collective=collective,
                 count=integer(raw.get("count")), bytes=integer(raw.get("bytes")),
                 datatype=text(raw.get("datatype")), redop=text(raw.get("redop")),
                 root=integer(raw.get("root"), -1), peer=integer(raw.get("peer"), -1),
                 tag=integer(raw.get("tag"), -1), algorithm=text(raw.get("algorithm")),
                 state=state, enqueued_us=num(raw.get("enqueued_us"), None),
                 started_us=num(raw.get("started_us"), None),
                 completed_us=num(raw.get("completed_us"), None),
                 status=raw.get("status") if isinstance(raw.get("status"), str) else None)


# ---------------------------------------------------------------------------------------------
# Statistics and units shared by the tools

def median(values):
    return percentile(values, 50.0)


def percentile(values, pct):
    """The pct-th percentile with linear interpolation between order statistics (numpy's
    default); nan for no values. values need not be sorted."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = (len(ordered) - 1) * pct / 100.0
    low = int(math.floor(position))
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def mad(values, center=None):
    """Median absolute deviation around center (default: the median)."""
    center = median(values) if center is None else center
    return median([abs(v - center) for v in values])


def robust_z(value, center, deviation, floor=0.0):
    """0.6745 * (value - center) / max(deviation, floor); inf when that divisor is 0 and
    value is above center."""
    divisor = max(deviation, floor)
    if divisor <= 0:
        return math.inf if value > center else 0.0
    return 0.6745 * (value - center) / divisor


def size_class(nbytes):
    """The power-of-two bucket of nbytes: the largest 2^k <= nbytes (0 for 0 bytes)."""
    return 0 if nbytes <= 0 else 1 << (int(nbytes).bit_length() - 1)


def format_duration(us):
    """"10.0 s", "50.0 ms", "12.3 us"."""
    if abs(us) >= 1e6:
        return f"{us / 1e6:.1f} s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.1f} ms"
    return f"{us:.1f} us"


def format_bytes(nbytes):
    """Binary units as in "4 KiB", "1.5 MiB", "8 B"."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
        value /= 1024
    return f"{nbytes} B"


TOTAL_TIMES_N = ("allgather", "reduce_scatter", "alltoall")


def bus_factor(op, n):
    """nccl-tests' factor from algorithm to bus bandwidth for an op over n ranks."""
    if n <= 1:
        return 1.0
    if op == "allreduce":
        return 2.0 * (n - 1) / n
    if op in TOTAL_TIMES_N:
        return (n - 1) / n
    return 1.0


def bandwidths(op, nbytes, n, dur_us):
    """(algbw, busbw) in GB/s (1e9 bytes/s) of one operation; (nan, nan) for dur_us <= 0."""
    if dur_us <= 0:
        return float("nan"), float("nan")
    total = nbytes * n if op in TOTAL_TIMES_N and n > 0 else nbytes
    algbw = total / dur_us / 1e3
    return algbw, algbw * bus_factor(op, n)
