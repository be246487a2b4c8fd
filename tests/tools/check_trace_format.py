#!/usr/bin/env python3
"""Structural check of hcomm profiles against the Trace Event format (the JSON object form that
Perfetto and chrome://tracing open) and the fields hcomm promises (README, "Observability").

Usage: check_trace_format.py [--level N] PROFILE.json...   exit 0 when every file passes, else 1
with one line per problem. Flow arrows (s/f) are matched across all the files given."""
import json
import sys

PHASES = {"X", "b", "e", "i", "C", "M", "s", "f"}
OP_ARGS = {"op", "seq", "communicator", "bytes", "count", "datatype", "algorithm", "status",
           "Collective name", "In msg nelems", "Out msg nelems", "dtype", "Group size"}


def check_file(path, problems, flows):
    def bad(msg):
        problems.append(f"{path}: {msg}")
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        bad(f"not readable JSON: {e}")
        return 0
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        bad("no traceEvents list")
        return 0
    other = doc.get("otherData", {})
    if other.get("format") != "hcomm-profile" or not isinstance(other.get("events_dropped"), int):
        bad("otherData lacks format hcomm-profile or events_dropped")
    if doc.get("displayTimeUnit") not in ("ms", "ns"):
        bad("displayTimeUnit must be ms or ns")
    open_async = {}
    ops = 0
    for n, e in enumerate(doc["traceEvents"]):
        where = f"event {n} ({e.get('ph')} {e.get('name')})"
        if not isinstance(e, dict) or e.get("ph") not in PHASES:
            bad(f"{where}: unknown phase")
            continue
        if not isinstance(e.get("name"), str) or not isinstance(e.get("pid"), int):
            bad(f"{where}: name must be a string and pid an integer")
        ph = e["ph"]
        if ph != "M" and not isinstance(e.get("ts"), (int, float)):
            bad(f"{where}: ts must be a number")
        if ph == "X":
            if not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0:
                bad(f"{where}: dur must be a number >= 0")
        if ph in ("X", "b") and e.get("cat") in ("collective", "p2p"):
            ops += 1
            missing = OP_ARGS - set(e.get("args", {}))
            if missing:
                bad(f"{where}: args lack {sorted(missing)}")
        if ph == "b":
            open_async[(e.get("cat"), e.get("id"))] = e["ts"]
        if ph == "e":
            start = open_async.pop((e.get("cat"), e.get("id")), None)
            if start is None or e["ts"] < start:
                bad(f"{where}: an end without its begin, or before it")
        if ph == "i" and e.get("s") not in ("g", "p", "t"):
            bad(f"{where}: instant scope must be g, p or t")
        if ph == "C" and not all(isinstance(v, (int, float)) for v in e.get("args", {}).values()):
            bad(f"{where}: counter values must be numbers")
        if ph in ("s", "f"):
            if "id" not in e:
                bad(f"{where}: a flow event needs an id")
            flows.setdefault(e.get("id"), set()).add(ph)
    if open_async:
        bad(f"{len(open_async)} async operations never end")
    return ops


def main(argv):
    level = 1
    if len(argv) > 2 and argv[1] == "--level":
        level = int(argv[2])
        argv = argv[2:]
    problems, flows, ops = [], {}, 0
    for path in argv[1:]:
        ops += check_file(path, problems, flows)
    if ops == 0:
        problems.append("no operation events at all")
    if level >= 2:
        paired = sum(1 for phases in flows.values() if phases == {"s", "f"})
        if paired == 0 or paired < 0.9 * len(flows):
            problems.append(f"{paired} of {len(flows)} flows have both their start and end")
    for p in problems:
        print(p)
    print(f"{len(argv) - 1} files, {ops} operations, {len(flows)} flows: "
          f"{'OK' if not problems else 'FAILED'}")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
