#!/usr/bin/env python3
"""summarize.py: the table (and JSON summary) of compare_peers.sh.

Reads RUNS/<round>.<lib>.<op>.<bytes>.json, one per launch, each in hcomm-bench's JSON shape
({"results": [{"algo", "time_us", "wrong", ...}]}; Gloo's allreduce has one result per
algorithm), and prints per op and requested size the median over rounds of each library's time,
the ratios hcomm/MPI and hcomm/best Gloo algorithm, and the wrong elements summed over rounds.
A missing file (a failed launch) shows as FAIL. Exit status 1 when anything failed or was wrong.
"""
import argparse
import json
import pathlib
import statistics
import sys

LIBS = ("hcomm", "mpi", "gloo")
GLOO_ORDER = ("ring", "halving_doubling", "bcube")  # table columns; other ops: their one algo
SHORT = {"halving_doubling": "hd"}  # table only; the JSON keeps Gloo's names


def human(b):
    """65536 -> '64 KiB'."""
    for unit in ("B", "KiB", "MiB"):
        if b < 1024 or b % 1024:
            return f"{b} {unit}"
        b //= 1024
    return f"{b} GiB"


def load(runs, rounds, lib, op, size):
    """{algo: [time_us per round]} (None when a round is missing), the wrong count over rounds
    and the algorithms hcomm chose."""
    times, wrong = {}, 0
    chosen = set()  # the algorithms hcomm chose, for the JSON
    for r in range(1, rounds + 1):
        path = runs / f"{r}.{lib}.{op}.{size}.json"
        if not path.exists():
            return None, wrong, chosen
        for row in json.loads(path.read_text())["results"]:
            # hcomm names the algorithm it chose; there is one per size, so one column.
            algo = row["algo"] if lib == "gloo" else lib
            if lib == "hcomm":
                chosen.add(row["algo"])
            times.setdefault(algo, []).append(row["time_us"])
            wrong += row["wrong"] or 0  # null: not checked
    return times, wrong, chosen


def ratio(a, b):
    return round(a / b, 3) if a is not None and b else None


def summarize(args):
    runs = pathlib.Path(args.runs)
    summary = {"ranks": args.ranks, "rounds": args.rounds, "dtype": "float32", "redop": "sum",
               "transport": "tcp loopback", "results": []}
    ok = True
    for op in args.ops.split(","):
        rows = []
        for size in args.sizes:
            row = {"op": op, "bytes": size, "wrong": {}, "failed": []}
            med = {}
            for lib in LIBS:
                times, row["wrong"][lib], chosen = load(runs, args.rounds, lib, op, size)
                if lib == "hcomm":
                    row["hcomm_algo"] = ",".join(sorted(chosen))
                if times is None:
                    row["failed"].append(lib)
                else:
                    med[lib] = {a: statistics.median(t) for a, t in times.items()}
            row["hcomm_us"] = med.get("hcomm", {}).get("hcomm")
            row["mpi_us"] = med.get("mpi", {}).get("mpi")
            row["gloo_us"] = med.get("gloo", {})
            best = min(row["gloo_us"].items(), key=lambda kv: kv[1], default=(None, None))
            row["gloo_best_algo"], row["gloo_best_us"] = best
            row["hcomm_over_mpi"] = ratio(row["hcomm_us"], row["mpi_us"])
            row["hcomm_over_gloo"] = ratio(row["hcomm_us"], row["gloo_best_us"])
            ok = ok and not row["failed"] and not any(row["wrong"].values())
            rows.append(row)
        summary["results"] += rows
        print_table(op, rows, args)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
    return 0 if ok else 1


def print_table(op, rows, args):
    found = {a for r in rows for a in r["gloo_us"]}
    algos = [a for a in GLOO_ORDER if a in found] + sorted(found - set(GLOO_ORDER))
    show_best = len(algos) > 1
    head = ["size", "hcomm_us", "mpi_us", "hcomm/mpi"] + [f"gloo_{SHORT.get(a, a)}" for a in algos]
    head += (["gloo_best", "best"] if show_best else []) + ["hcomm/gloo", "wrong(h/m/g)"]
    redop = " sum" if op == "allreduce" else ""
    print(f"\n{op} float32{redop}, {args.ranks} ranks, TCP loopback, "
          f"median of {args.rounds} rounds (us)")
    table = [head]
    for r in rows:
        def fmt(v, lib):
            return "FAIL" if lib in r["failed"] else f"{v:.1f}"
        line = [human(r["bytes"]), fmt(r["hcomm_us"], "hcomm"), fmt(r["mpi_us"], "mpi"),
                f"{r['hcomm_over_mpi']:.2f}" if r["hcomm_over_mpi"] else "-"]
        line += [fmt(r["gloo_us"][a], "gloo") if a in r["gloo_us"] else "-" for a in algos]
        if show_best:
            line += [fmt(r["gloo_best_us"], "gloo"), SHORT.get(r["gloo_best_algo"], r["gloo_best_algo"] or "-")]
        line.append(f"{r['hcomm_over_gloo']:.2f}" if r["hcomm_over_gloo"] else "-")
        line.append("/".join(str(r["wrong"][lib]) for lib in LIBS))
        table.append(line)
    widths = [max(len(t[i]) for t in table) for i in range(len(head))]
    for t in table:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(t, widths))))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", required=True, help="directory of the per-launch JSON files")
    p.add_argument("--rounds", type=int, required=True)
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--ops", required=True, help="comma-separated")
    p.add_argument("--json", help="write the summary here")
    p.add_argument("sizes", type=int, nargs="+", help="requested sizes in bytes")
    sys.exit(summarize(p.parse_args()))


if __name__ == "__main__":
    main()
