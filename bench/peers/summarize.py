#!/usr/bin/env python3
"""summarize.py: the table (and JSON summary) of compare_peers.sh.

Reads RUNS/<round>.<lib>.<op>.<bytes>.json, one per launch, each in hcomm-bench's JSON shape
({"results": [{"algo", "time_us", "wrong", ...}]}; Gloo's allreduce has one result per
algorithm), and prints per op and requested size the median over rounds of each library's time,
the ratios hcomm/MPI and hcomm/best Gloo algorithm, and the wrong elements summed over rounds.
A missing file (a failed launch) shows as FAIL. Exit status 1 when anything failed or was wrong.

--transport shm (compare_peers.sh -t shm): hcomm and MPI only, no Gloo columns. With --memcpy
SIZES it also reads RUNS/<round>.memcpy.<bytes>.json (memcpy_bw.c: {"bytes", "memcpy_gbps"}),
and the allreduce table adds the median memcpy bandwidth over rounds and, for hcomm and MPI,
busbw/memcpy: the nccl-tests bus bandwidth (bytes / time * 2(n-1)/n) over the memcpy bandwidth
at the nearest measured size (none for a size below the smallest measured).
"""
import argparse
import json
import math
import pathlib
import statistics
import sys

LIBS = ("hcomm", "mpi", "gloo")
SHM_LIBS = ("hcomm", "mpi")  # Gloo has no shared-memory transport
TRANSPORT = {"tcp": "tcp loopback", "shm": "shared memory"}  # the JSON's "transport"
HEADING = {"tcp": "TCP loopback",
           "shm": "shared memory (MPI: btl self,vader; hcomm: HCOMM_TRANSPORT=auto; no Gloo)"}
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


def load_memcpy(runs, rounds, sizes):
    """{bytes: median memcpy GB/s over rounds}, None for a size with a round missing."""
    out = {}
    for size in sizes:
        paths = [runs / f"{r}.memcpy.{size}.json" for r in range(1, rounds + 1)]
        out[size] = (statistics.median(json.loads(p.read_text())["memcpy_gbps"] for p in paths)
                     if all(p.exists() for p in paths) else None)
    return out


def nearest(memcpy, size):
    """The measured size nearest to size (by ratio); None below the smallest measured."""
    if not memcpy or size < min(memcpy):
        return None
    return min(memcpy, key=lambda m: abs(math.log(size / m)))


def busbw_gbps(size, us, ranks):
    """nccl-tests' allreduce bus bandwidth, GB/s: size / time * 2(n-1)/n."""
    return size / (us * 1e3) * 2 * (ranks - 1) / ranks if us else None


def summarize(args):
    runs = pathlib.Path(args.runs)
    shm = args.transport == "shm"
    libs = SHM_LIBS if shm else LIBS
    summary = {"ranks": args.ranks, "rounds": args.rounds, "dtype": "float32", "redop": "sum",
               "transport": TRANSPORT[args.transport], "results": []}
    memcpy = load_memcpy(runs, args.rounds, args.memcpy) if shm else {}
    if shm:
        summary["memcpy_gbps"] = {str(b): g for b, g in memcpy.items()}
    ok = None not in memcpy.values()
    for op in args.ops.split(","):
        rows = []
        for size in args.sizes:
            row = {"op": op, "bytes": size, "wrong": {}, "failed": []}
            med = {}
            for lib in libs:
                times, row["wrong"][lib], chosen = load(runs, args.rounds, lib, op, size)
                if lib == "hcomm":
                    row["hcomm_algo"] = ",".join(sorted(chosen))
                if times is None:
                    row["failed"].append(lib)
                else:
                    med[lib] = {a: statistics.median(t) for a, t in times.items()}
            row["hcomm_us"] = med.get("hcomm", {}).get("hcomm")
            row["mpi_us"] = med.get("mpi", {}).get("mpi")
            if not shm:
                row["gloo_us"] = med.get("gloo", {})
                best = min(row["gloo_us"].items(), key=lambda kv: kv[1], default=(None, None))
                row["gloo_best_algo"], row["gloo_best_us"] = best
            row["hcomm_over_mpi"] = ratio(row["hcomm_us"], row["mpi_us"])
            if not shm:
                row["hcomm_over_gloo"] = ratio(row["hcomm_us"], row["gloo_best_us"])
            elif op == "allreduce":
                near = nearest(memcpy, size)
                row["memcpy_bytes"] = near
                row["memcpy_gbps"] = memcpy.get(near)
                for lib in libs:
                    bw = busbw_gbps(size, row[f"{lib}_us"], args.ranks)
                    row[f"{lib}_busbw_gbps"] = None if bw is None else round(bw, 3)
                    row[f"{lib}_busbw_over_memcpy"] = ratio(bw, row["memcpy_gbps"])
            ok = ok and not row["failed"] and not any(row["wrong"].values())
            rows.append(row)
        summary["results"] += rows
        (print_shm_table if shm else print_table)(op, rows, args)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
    return 0 if ok else 1


def cell(r, v, lib):
    """A time in a row's table line, or FAIL when that library's run failed."""
    return "FAIL" if lib in r["failed"] else f"{v:.1f}"


def leading_cells(r):
    """Size, hcomm, MPI and their ratio: how every table line starts."""
    return [human(r["bytes"]), cell(r, r["hcomm_us"], "hcomm"), cell(r, r["mpi_us"], "mpi"),
            f"{r['hcomm_over_mpi']:.2f}" if r["hcomm_over_mpi"] else "-"]


def print_table(op, rows, args):
    found = {a for r in rows for a in r["gloo_us"]}
    algos = [a for a in GLOO_ORDER if a in found] + sorted(found - set(GLOO_ORDER))
    show_best = len(algos) > 1
    head = ["size", "hcomm_us", "mpi_us", "hcomm/mpi"] + [f"gloo_{SHORT.get(a, a)}" for a in algos]
    head += (["gloo_best", "best"] if show_best else []) + ["hcomm/gloo", "wrong(h/m/g)"]
    redop = " sum" if op == "allreduce" else ""
    print(f"\n{op} float32{redop}, {args.ranks} ranks, {HEADING[args.transport]}, "
          f"median of {args.rounds} rounds (us)")
    table = [head]
    for r in rows:
        line = leading_cells(r)
        line += [cell(r, r["gloo_us"][a], "gloo") if a in r["gloo_us"] else "-" for a in algos]
        if show_best:
            line += [cell(r, r["gloo_best_us"], "gloo"), SHORT.get(r["gloo_best_algo"], r["gloo_best_algo"] or "-")]
        line.append(f"{r['hcomm_over_gloo']:.2f}" if r["hcomm_over_gloo"] else "-")
        line.append("/".join(str(r["wrong"][lib]) for lib in LIBS))
        table.append(line)
    print_aligned(table)


def print_shm_table(op, rows, args):
    """-t shm: hcomm and MPI; for allreduce also memcpy GB/s and each one's busbw/memcpy."""
    bw = op == "allreduce"
    head = ["size", "hcomm_us", "mpi_us", "hcomm/mpi"]
    head += ["memcpy_GB/s", "hcomm_busbw/memcpy", "mpi_busbw/memcpy"] if bw else []
    head.append("wrong(h/m)")
    redop = " sum" if op == "allreduce" else ""
    print(f"\n{op} float32{redop}, {args.ranks} ranks, {HEADING[args.transport]}, "
          f"median of {args.rounds} rounds (us)")
    if bw:
        print("busbw/memcpy: bus bandwidth (bytes / time * 2(n-1)/n) over this machine's "
              "single-thread memcpy bandwidth at that size (memcpy_GB/s, median of rounds)")
    table = [head]
    for r in rows:
        line = leading_cells(r)
        if bw:
            if r["memcpy_bytes"] is None:
                line.append("-")
            else:
                line.append("FAIL" if r["memcpy_gbps"] is None else f"{r['memcpy_gbps']:.1f}")
            line += [f"{r[f'{lib}_busbw_over_memcpy']:.2f}"
                     if r[f"{lib}_busbw_over_memcpy"] is not None else "-" for lib in SHM_LIBS]
        line.append("/".join(str(r["wrong"][lib]) for lib in SHM_LIBS))
        table.append(line)
    print_aligned(table)


def print_aligned(table):
    """The first column left-aligned, the others right-aligned, two spaces apart."""
    widths = [max(len(t[i]) for t in table) for i in range(len(table[0]))]
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
    p.add_argument("--transport", choices=sorted(TRANSPORT), default="tcp",
                   help="tcp: hcomm, MPI and Gloo (default); shm: hcomm and MPI")
    p.add_argument("--memcpy", default="", type=lambda v: [int(b) for b in v.split(",") if b],
                   help="comma-separated sizes with memcpy_bw results (--transport shm)")
    p.add_argument("sizes", type=int, nargs="+", help="requested sizes in bytes")
    sys.exit(summarize(p.parse_args()))


if __name__ == "__main__":
    main()
