"""Tests of hcomm-visualize and hcomm-diagnose (tools/trace/) on synthetic files that follow
notes/trace_formats.md: 4 ranks, 1000 small allreduces with one that rank 1 enters 50 ms late,
a size sweep with level-2 transfers, overlapping async operations, send/recv, link events and
counters; dump sets for a missing rank, a mismatched call, a straggler, a failure, and a healthy
job; and bad inputs.

Run: python3 -m pytest -q tests/tools
Write the synthetic files for a manual look: python3 tests/tools/test_trace_tools.py OUT_DIR
"""

import json
import os
import random
import re
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.normpath(os.path.join(HERE, "..", "..", "tools", "trace"))
VISUALIZE = os.path.join(TOOLS, "hcomm-visualize")
DIAGNOSE = os.path.join(TOOLS, "hcomm-diagnose")
DOM_CHECK = os.path.join(HERE, "report_dom.sh")
COMM = "9f3c2a7b11d0e4a2"
WORLD = 4
BASE_US = 5_000_000.0
LATE_SEQ = 700
P2P_KEY = 1 << 63


# ---------------------------------------------------------------------------------------------
# Synthetic profiles

def op_args(op, seq, rank, nbytes, start, cat="collective", **extra):
    count = max(nbytes // 4, 1)
    args = {"op": op, "seq": seq, "communicator": COMM, "comm_rank": rank, "bytes": nbytes,
            "count": count, "datatype": "float32",
            "redop": "sum" if op in ("allreduce", "reduce", "reduce_scatter") else "none",
            "algorithm": "ring", "root": 0 if op == "broadcast" else -1, "peer": -1,
            "tag": -1, "compression": "none", "status": "ok", "enqueued_us": start,
            "started_us": start + 0.1, "Collective name": op, "In msg nelems": count,
            "Out msg nelems": count, "dtype": "Float", "Group size": WORLD,
            "Process Group Name": COMM}
    args.update(extra)
    return args


def complete(rank, op, seq, nbytes, start, dur, cat="collective", **extra):
    return {"ph": "X", "cat": cat, "name": op, "pid": rank, "tid": 0, "ts": start, "dur": dur,
            "args": op_args(op, seq, rank, nbytes, start, cat, **extra)}


def async_pair(rank, op, seq, nbytes, start, dur):
    ident = f"{COMM}:{seq}"
    return [{"ph": "b", "cat": "collective", "name": op, "id": ident, "pid": rank, "tid": 0,
             "ts": start, "args": op_args(op, seq, rank, nbytes, start)},
            {"ph": "e", "cat": "collective", "name": op, "id": ident, "pid": rank, "tid": 0,
             "ts": start + dur}]


def collective_round(rng, events, op, seq, nbytes, t, work_us, late=None):
    """All ranks run one collective entered at about t; late = (rank, us) enters late.
    Returns the time it ends."""
    enter = {r: t + rng.uniform(0, 1) for r in range(WORLD)}
    if late:
        enter[late[0]] += late[1]
    end = max(enter.values()) + work_us * rng.uniform(0.8, 1.2)
    for r in range(WORLD):
        events[r].append(complete(r, op, seq, nbytes, enter[r], end - enter[r]))
    return end


def transfers(events, seq, start, dur, nbytes):
    """Level 2: each rank sends to the next and receives from the previous, with flows."""
    for r in range(WORLD):
        dst = (r + 1) % WORLD
        args = {"op": "allreduce", "seq": seq, "bytes": nbytes}
        events[r].append({"ph": "X", "cat": "transfer", "name": "send", "pid": r, "tid": 1,
                          "ts": start, "dur": dur, "args": dict(args, peer=dst)})
        events[dst].append({"ph": "X", "cat": "transfer", "name": "recv", "pid": dst, "tid": 1,
                            "ts": start + 1, "dur": dur, "args": dict(args, peer=r)})
        ident = f"{COMM}:{seq}:{r}:{dst}:0"
        events[r].append({"ph": "s", "cat": "flow", "name": "transfer", "id": ident, "pid": r,
                          "tid": 1, "ts": start})
        events[dst].append({"ph": "f", "bp": "e", "cat": "flow", "name": "transfer",
                            "id": ident, "pid": dst, "tid": 1, "ts": start + 1 + dur})


def link(rank, name, ts, **args):
    return {"ph": "i", "s": "p", "cat": "link", "name": name, "pid": rank, "tid": 0, "ts": ts,
            "args": args}


def counters(events, t, sent):
    for r in range(WORLD):
        events[r].append({"ph": "C", "name": "bytes sent", "pid": r, "ts": t,
                          "args": {"shm": sent, "tcp": sent // 2}})
        events[r].append({"ph": "C", "name": "operations in flight", "pid": r, "ts": t,
                          "args": {"in flight": 1}})


def profile_events():
    """rank -> its events, in time order."""
    rng = random.Random(7)
    events = {r: [] for r in range(WORLD)}
    t, seq = BASE_US, 0
    for i in range(1000):
        seq += 1
        late = (1, 50000.0) if seq == LATE_SEQ else None
        t = collective_round(rng, events, "allreduce", seq, 8, t, 10.0, late) + 5
        if i % 100 == 0:
            counters(events, t, 1000 * i)
    events[0].append(link(0, "failover", t + 1, peer=1, **{"from": "rdma", "to": "tcp-fallback"},
                          reason="ibv completion error", detection_ms=812.0))
    events[1].append(link(1, "link_down", t + 2, peer=0, reason="port down"))
    for nbytes in (4096, 65536, 1 << 20):
        for _ in range(10):
            seq += 1
            start = t
            t = collective_round(rng, events, "allreduce", seq, nbytes, t, 10 + nbytes / 2000)
            if nbytes == 1 << 20:
                transfers(events, seq, start + 2, (t - start) / 3, nbytes // 4)
            t += 5
    events[0].append(link(0, "failback", t + 1, peer=1, **{"from": "tcp-fallback", "to": "rdma"},
                          reason="link restored"))
    for _ in range(20):   # an allgather and a broadcast in flight together: async pairs
        seq += 2
        for r in range(WORLD):
            events[r] += async_pair(r, "allgather", seq - 1, 4096, t + r * 0.3, 40.0)
            events[r] += async_pair(r, "broadcast", seq, 65536, t + 10 + r * 0.3, 40.0)
        t += 60
    for k in range(5):
        key = P2P_KEY + k
        events[0].append(complete(0, "send", key, 4096, t, 20.0, cat="p2p", peer=1, tag=7))
        events[1].append(complete(1, "recv", key, 4096, t, 21.0, cat="p2p", peer=0, tag=7))
        t += 30
    for r in range(WORLD):
        events[r].sort(key=lambda e: e["ts"])
    return events


def metadata(rank):
    host = f"node{rank // 2}"
    return [{"ph": "M", "name": "process_name", "pid": rank, "tid": 0,
             "args": {"name": f"rank {rank} ({host})"}},
            {"ph": "M", "name": "thread_name", "pid": rank, "tid": 0,
             "args": {"name": "operations"}},
            {"ph": "M", "name": "thread_name", "pid": rank, "tid": 1,
             "args": {"name": "transfers"}}]


def write_profiles(directory):
    """hcomm_profile.<rank>.json for 4 ranks; returns their paths."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for rank, events in profile_events().items():
        doc = {"traceEvents": metadata(rank) + events, "displayTimeUnit": "ms",
               "otherData": {"format": "hcomm-profile", "version": 1, "rank": rank,
                             "world_size": WORLD, "host": f"node{rank // 2}", "pid": 1000 + rank,
                             "level": 2, "clock_offset_us": 0.0, "events_recorded": len(events),
                             "events_dropped": 7 if rank == 3 else 0,
                             "communicators": [{"id": COMM, "rank": rank, "size": WORLD}]}}
        paths.append(os.path.join(directory, f"hcomm_profile.{rank}.json"))
        with open(paths[-1], "w") as handle:
            json.dump(doc, handle)
    return paths


def write_merged_profile(path):
    """All ranks' events in one file without hcomm's header (as a trace merger writes it)."""
    events = [e for rank, mine in profile_events().items() for e in metadata(rank) + mine]
    with open(path, "w") as handle:
        json.dump({"traceEvents": events}, handle)
    return path


# ---------------------------------------------------------------------------------------------
# Synthetic flight-recorder dumps

def entry(seq, state="completed", enq=None, kind="allreduce", count=1024, redop="sum", root=-1,
          status=None, completed=None):
    enq = BASE_US + seq * 100.0 if enq is None else enq
    done = state in ("completed", "failed")
    return {"seq": seq, "kind": kind, "collective": True, "count": count, "bytes": count * 4,
            "datatype": "float32", "redop": redop, "root": root, "peer": -1, "tag": -1,
            "algorithm": "ring", "state": state, "enqueued_us": enq,
            "started_us": enq + 1.0 if state != "enqueued" else None,
            "completed_us": (completed or enq + 20.0) if done else None,
            "status": status or ("ok" if state == "completed" else None)}


def write_dumps(directory, per_rank, dumped_at, buffer_size=2000, reason="stall"):
    """per_rank: rank -> entries (oldest first); keeps the newest buffer_size of each."""
    os.makedirs(directory, exist_ok=True)
    for rank, entries in per_rank.items():
        doc = {"format": "hcomm-flight-recorder", "version": 1, "rank": rank,
               "world_size": WORLD, "host": f"node{rank // 2}", "pid": 2000 + rank,
               "reason": reason, "reason_detail": "", "dumped_at_us": dumped_at,
               "clock_offset_us": 0.0,
               "communicators": [{"id": COMM, "rank": rank, "size": WORLD,
                                  "buffer_size": buffer_size, "recorded": len(entries),
                                  "entries": entries[-buffer_size:]}]}
        with open(os.path.join(directory, f"hcomm_trace.{rank}.{2000 + rank}.json"), "w") as f:
            json.dump(doc, f)
    return directory


def missing_dumps(directory, with_rank_2=True):
    """Rank 2 never entered #1042; the others wait in it for 10 s. Buffers of 500 entries."""
    done = [entry(s) for s in range(1, 1042)]
    per_rank = {r: done + [entry(1042, "started")] for r in (0, 1, 3)}
    if with_rank_2:
        per_rank[2] = list(done)
    return write_dumps(directory, per_rank, BASE_US + 1042 * 100.0 + 10e6, buffer_size=500)


def mismatch_dumps(directory):
    done = [entry(s) for s in range(1, 7)]
    per_rank = {r: done + [entry(7, "started")] for r in (0, 2, 3)}
    per_rank[1] = done + [entry(7, "started", kind="broadcast", redop="none", root=0)]
    return write_dumps(directory, per_rank, BASE_US + 60e6)


def straggler_dumps(directory):
    rng = random.Random(3)
    per_rank = {r: [entry(s, enq=BASE_US + s * 30000.0 + rng.uniform(0, 50)
                          + (20000.0 + rng.uniform(0, 200) if r == 3 else 0))
                    for s in range(1, 51)] for r in range(WORLD)}
    return write_dumps(directory, per_rank, BASE_US + 60e6, reason="request")


def failed_dumps(directory):
    done = [entry(s) for s in range(1, 12)]
    enq = BASE_US + 1200.0
    per_rank = {0: done + [entry(12, "failed", status="HCOMM_ERR_TIMEOUT: allreduce #12 waited "
                                 "30.0 s", completed=enq + 30e6)]}
    for r in (1, 2, 3):
        per_rank[r] = done + [entry(12, "failed", completed=enq + 30e6 + 5000.0 * r,
                                    status="HCOMM_ERR_PEER_LOST: rank 0 aborted")]
    return write_dumps(directory, per_rank, enq + 31e6, reason="abort")


def healthy_dumps(directory):
    return write_dumps(directory, {r: [entry(s) for s in range(1, 21)] for r in range(WORLD)},
                       BASE_US + 60e6, reason="exit")


# ---------------------------------------------------------------------------------------------
# Helpers

def run(tool, *args, cwd=None):
    return subprocess.run([sys.executable, tool, *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


def answer(result):
    """The finding lines: those before the blank line that starts the details."""
    return result.stdout.split("\n\n")[0].splitlines()


def embedded_data(page):
    match = re.search(r'<script type="application/json" id="trace-data">(.*?)</script>', page,
                      re.S)
    assert match, "no #trace-data blob in the report"
    return json.loads(match.group(1))


@pytest.fixture(scope="module")
def profiles(tmp_path_factory):
    return write_profiles(str(tmp_path_factory.mktemp("profiles")))


@pytest.fixture(scope="module")
def report(profiles, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report.html"
    result = run(VISUALIZE, *profiles, "-o", out)
    assert result.returncode == 0, result.stderr
    return result, out.read_text()


# ---------------------------------------------------------------------------------------------
# hcomm-visualize

def test_visualize_summary_names_the_late_rank(report):
    result, _ = report
    lines = result.stdout.splitlines()
    assert lines[0].startswith("hcomm profile: 4 ranks (0-3) on 2 hosts, 1 communicator, ")
    outliers = [line for line in lines if line.startswith("OUTLIER")]
    assert len(outliers) == 3, result.stdout
    assert sorted(re.search(r" rank (\d+):", line).group(1) for line in outliers) == \
        ["0", "2", "3"]
    for line in outliers:
        assert re.fullmatch(rf"OUTLIER allreduce #{LATE_SEQ} rank \d: 5\d{{4}}\.\d us "
                            r"\(mean \d+\.\d us\); rank 1 entered 50\.0 ms after the first",
                            line), line


def test_visualize_summary_kinds_links_dropped(report):
    out = report[0].stdout
    assert re.search(r"^  allreduce: 4120 ops, p50 \d+\.\d us, busbw [\d.]+ GB/s at 1 MiB$",
                     out, re.M), out
    assert re.search(r"^  allgather: 80 ops, p50 40\.0 us, busbw", out, re.M), out
    assert re.search(r"^  send: 5 ops", out, re.M) and re.search(r"^  recv: 5 ops", out, re.M)
    assert "link events: 3 (failback 1, failover 1, link_down 1)" in out
    assert re.search(r"^dropped events: rank 3 dropped 7 \(\d+ recorded\);", out, re.M), out
    assert report[0].stderr == ""


def test_visualize_report_is_self_contained(report):
    page = report[1]
    for ident in ("timeline", "op-table", "outliers", "link-events", "bw-plot"):
        assert f'id="{ident}"' in page, ident
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=|@import|url\(", page)
    assert not re.search(r"@@[A-Z_]+@@", page), "a template placeholder was left"


def test_visualize_report_tables(report):
    page = report[1]
    table = page[page.index('id="op-table"'):].split("</table>")[0]
    assert "<td>8 B</td><td>4000</td>" in table
    assert "<td>1 MiB</td><td>40</td>" in table and "<td>4 KiB</td>" in table
    outliers = page[page.index('id="outliers"'):].split("</table>")[0]
    assert outliers.count("rank 1 entered 50.0 ms after the first") == 3
    links = page[page.index('id="link-events"'):].split("</table>")[0]
    assert "failover" in links and "tcp-fallback" in links and "812.0" in links
    plot = page[page.index('id="bw-plot"'):].split("</svg>")[0]
    assert plot.count('class="bw-series"') == 5   # allreduce allgather broadcast send recv


def test_visualize_embedded_data(report):
    data = embedded_data(report[1])
    assert [r["rank"] for r in data["ranks"]] == [0, 1, 2, 3]
    assert len(data["ops"]) == 4120 + 80 + 80 + 10
    assert len(data["links"]) == 3 and len(data["xfers"]) == 10 * 2 * WORLD
    kinds = data["kinds"]
    asynchronous = [o for o in data["ops"] if o[7] & 4]
    assert {kinds[o[4]] for o in asynchronous} == {"allgather", "broadcast"}
    assert len(asynchronous) == 160
    assert max(r["lanes"] for r in data["ranks"]) >= 2, "overlapping ops share a lane"
    assert sum(1 for o in data["ops"] if o[7] & 2) == 3
    assert data["args"][0]["communicator"] == COMM


def test_visualize_merged_file_groups_by_pid(tmp_path):
    merged = write_merged_profile(str(tmp_path / "all.json"))
    result = run(VISUALIZE, merged, "-o", tmp_path / "r.html")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("hcomm profile: 4 ranks (0-3)")
    assert sum(line.startswith("OUTLIER") for line in result.stdout.splitlines()) == 3


def test_visualize_default_output_and_installed_layout(profiles, tmp_path):
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    share = prefix / "share" / "hcomm" / "tools"
    share.mkdir(parents=True)
    for tool in (VISUALIZE, DIAGNOSE):
        shutil.copy(tool, prefix / "bin")
    for name in ("hcomm_traces.py", "report_template.html"):
        shutil.copy(os.path.join(TOOLS, name), share)
    os.symlink(prefix / "bin" / "hcomm-visualize", tmp_path / "linked")
    result = run(tmp_path / "linked", *profiles, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "report.html").is_file()
    result = run(prefix / "bin" / "hcomm-diagnose", healthy_dumps(str(tmp_path / "dumps")))
    assert result.returncode == 0 and result.stdout.startswith("OK: "), result.stderr


def test_tools_run_by_their_shebang():
    for tool in (VISUALIZE, DIAGNOSE):
        assert os.access(tool, os.X_OK), f"{tool} is not executable"
        result = subprocess.run([tool, "--help"], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0 and "usage:" in result.stdout, result.stderr


def test_visualize_rejects_a_rank_twice(profiles, tmp_path):
    result = run(VISUALIZE, profiles[0], profiles[0], "-o", tmp_path / "r.html")
    assert result.returncode == 2 and "rank 0 is also in" in result.stderr


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed")
def test_report_renders_in_chromium(report, tmp_path):
    path = tmp_path / "report.html"
    path.write_text(report[1])
    result = subprocess.run(["bash", DOM_CHECK, str(path)], capture_output=True, text=True,
                            timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr


# ---------------------------------------------------------------------------------------------
# hcomm-diagnose

def test_diagnose_missing_rank(tmp_path):
    result = run(DIAGNOSE, missing_dumps(str(tmp_path)))
    assert result.returncode == 0, result.stderr
    assert answer(result) == ["MISSING: rank 2 did not enter allreduce #1042 (ranks 0,1,3 wait "
                              "in it since 10.0 s); rank 2 is at: allreduce #1041 completed"]
    assert "500 of 1042 entries kept" in result.stdout


def test_diagnose_missing_dump(tmp_path):
    result = run(DIAGNOSE, missing_dumps(str(tmp_path), with_rank_2=False))
    assert answer(result) == ["MISSING: rank 2 did not enter allreduce #1042 (ranks 0,1,3 wait "
                              "in it since 10.0 s); no dump from rank 2"]


def test_diagnose_missing_json(tmp_path):
    result = run(DIAGNOSE, missing_dumps(str(tmp_path)), "--json")
    findings = json.loads(result.stdout)
    assert set(findings) >= {"missing", "mismatch", "straggler", "failed_first"}
    (missing,) = findings["missing"]
    assert (missing["rank"], missing["seq"], missing["entered_by"]) == (2, 1042, [0, 1, 3])
    assert missing["rank_is_at"] == "allreduce #1041 completed"
    assert findings["mismatch"] == [] and findings["straggler"] == []
    assert findings["failed_first"] is None


def test_diagnose_mismatch(tmp_path):
    result = run(DIAGNOSE, mismatch_dumps(str(tmp_path)))
    assert answer(result) == ["MISMATCH: #7: rank 1 called broadcast (count 1024, float32, "
                              "root 0); ranks 0,2,3 called allreduce (count 1024, float32, sum)"]


def test_diagnose_straggler(tmp_path):
    result = run(DIAGNOSE, straggler_dumps(str(tmp_path)))
    (line,) = answer(result)
    match = re.fullmatch(r"STRAGGLER: rank 3 enters (\d+\.\d) ms after the others \(median "
                         r"delay over 50 operations; robust score (\d+\.\d)\)", line)
    assert match, line
    assert 20.0 <= float(match.group(1)) <= 20.3 and float(match.group(2)) >= 5
    findings = json.loads(run(DIAGNOSE, str(tmp_path), "--json").stdout)
    assert [s["rank"] for s in findings["straggler"]] == [3]


def test_diagnose_failed_first(tmp_path):
    directory = failed_dumps(str(tmp_path))
    (line,) = answer(run(DIAGNOSE, directory))
    assert re.fullmatch(r"FAILED FIRST: rank 0 allreduce #12 failed at \d+\.\d{6} s : "
                        r"HCOMM_ERR_TIMEOUT: allreduce #12 waited 30\.0 s", line), line
    first = json.loads(run(DIAGNOSE, directory, "--json").stdout)["failed_first"]
    assert (first["rank"], first["seq"]) == (0, 12)


def test_diagnose_ok_and_files_given_one_by_one(tmp_path):
    directory = healthy_dumps(str(tmp_path))
    files = sorted(os.path.join(directory, name) for name in os.listdir(directory))
    result = run(DIAGNOSE, *files)
    assert answer(result) == ["OK: no missing, mismatched or straggling rank found"]


def test_diagnose_several_communicators(tmp_path):
    """World ranks 2 and 3 also share a 2-rank communicator, mismatched at #3, with a send."""
    directory = missing_dumps(str(tmp_path))
    for world, comm_rank in ((2, 0), (3, 1)):
        path = os.path.join(directory, f"hcomm_trace.{world}.{2000 + world}.json")
        with open(path) as handle:
            doc = json.load(handle)
        entries = [entry(s, count=8 if s == 3 and comm_rank else 1024) for s in (1, 2, 3)]
        entries.append(dict(entry(4, kind="send"), seq=P2P_KEY + 1, collective=False,
                            peer=1 - comm_rank, tag=5))
        doc["communicators"].append({"id": "aa11", "rank": comm_rank, "size": 2,
                                     "buffer_size": 100, "recorded": 4, "entries": entries})
        with open(path, "w") as handle:
            json.dump(doc, handle)
    assert answer(run(DIAGNOSE, directory)) == [
        "MISSING: rank 2 did not enter allreduce #1042 (ranks 0,1,3 wait in it since 10.0 s); "
        f"rank 2 is at: allreduce #1041 completed; communicator {COMM}",
        "MISMATCH: #3: rank 1 (world rank 3) called allreduce (count 8, float32, sum); rank 0 "
        "(world rank 2) called allreduce (count 1024, float32, sum); communicator aa11"]


# ---------------------------------------------------------------------------------------------
# Bad input: exit 2, a message naming the file, no traceback

def bad_inputs(tmp_path):
    not_json = tmp_path / "hcomm_trace.0.1.json"
    not_json.write_text("this is not JSON {")
    foreign = tmp_path / "other.json"
    foreign.write_text(json.dumps({"hello": [1, 2, 3]}))
    chrome = tmp_path / "chrome.json"
    chrome.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "paint", "ts": 1,
                                                   "dur": 2, "pid": 1, "tid": 1}]}))
    truncated = tmp_path / "cut.json"
    truncated.write_text('{"traceEvents": [{"ph": "X", "cat": "coll')
    return {"not valid JSON": not_json, "not an hcomm file": foreign,
            "without hcomm events": chrome, "cut short": truncated,
            "no such file": tmp_path / "absent.json"}


@pytest.mark.parametrize("tool", [VISUALIZE, DIAGNOSE], ids=["visualize", "diagnose"])
def test_bad_inputs_exit_2(tool, tmp_path):
    for expected, path in bad_inputs(tmp_path).items():
        result = run(tool, path, *(["-o", tmp_path / "r.html"] if tool == VISUALIZE else []))
        assert result.returncode == 2, (path, result.stderr)
        assert str(path) in result.stderr and expected in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and result.stdout == ""


def test_wrong_kind_of_file(profiles, tmp_path):
    result = run(DIAGNOSE, profiles[0])
    assert result.returncode == 2 and "a profile, not a flight-recorder dump" in result.stderr
    dumps = healthy_dumps(str(tmp_path / "dumps"))
    result = run(VISUALIZE, os.path.join(dumps, "hcomm_trace.0.2000.json"), "-o",
                 tmp_path / "r.html")
    assert result.returncode == 2 and "a flight-recorder dump, not a profile" in result.stderr


def test_diagnose_bad_dump_fields_and_empty_directory(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run(DIAGNOSE, empty)
    assert result.returncode == 2 and "no hcomm_trace.*.json files" in result.stderr
    broken = tmp_path / "hcomm_trace.0.1.json"
    broken.write_text(json.dumps({"format": "hcomm-flight-recorder", "rank": 0,
                                  "communicators": [{"id": COMM, "rank": 0, "size": 4,
                                                     "entries": [{"seq": 1, "kind": "x",
                                                                  "state": "lost"}]}]}))
    result = run(DIAGNOSE, broken)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "communicators[0].entries[0]: state 'lost'" in result.stderr


if __name__ == "__main__":
    # Writes the synthetic inputs for a manual look at the tools.
    out = sys.argv[1] if len(sys.argv) > 1 else "trace_samples"
    write_profiles(os.path.join(out, "profiles"))
    for name, make in (("missing", missing_dumps), ("mismatch", mismatch_dumps),
                       ("straggler", straggler_dumps), ("failed", failed_dumps),
                       ("healthy", healthy_dumps)):
        make(os.path.join(out, "dumps", name))
    print(f"wrote {out}/profiles and {out}/dumps/{{missing,mismatch,straggler,failed,healthy}}")
