#!/usr/bin/env python3
"""summarize.py: the table (and JSON summary) of compare_peers.sh.

Reads RUNS/<round>.<lib>.<op>.<bytes>.json, one per launch, each in hcomm-bench's JSON shape
({"results": [{"algo", "time_us", "wrong", ...}]}; Gloo's allreduce has one result per
algorithm), and prints per op and size (--op-sizes) the median over rounds of each library's
time, the ratios hcomm/MPI and hcomm/best Gloo algorithm, and the wrong elements summed over
rounds. A missing file (a failed launch) shows as FAIL. Exit status 1 when anything failed or was
wrong.

Before each table: the CPU model (--cpu). In each table, after the size: memcpy_GB/s, the median
over rounds of RUNS/<round>.memcpy.<bytes>.json (memcpy_bw.c: {"bytes", "memcpy_gbps"}; --memcpy
SIZES) at that size (else the nearest measured, by ratio), and bound_us, the memory-bound time:
    bound_us = F(op, n) * bytes / memcpy bandwidth
with F the nccl-tests bus factor, i.e. the bytes that must reach each rank from the other n - 1,
each counted as one memcpy (read once, written once) at one core's speed: allreduce 2(n-1)/n
(reduce-scatter then allgather), broadcast 1 (each non-root rank receives it all), allgather,
reduce_scatter, alltoall (n-1)/n (all blocks but a rank's own). bytes is the size column (the
larger of one rank's send and receive buffers, as in nccl-tests). With a core per rank and shared
memory this is a practical lower bound for a copy-based implementation (each such byte is copied
at least once, a reduction costs more than a copy); with more ranks than cores the ranks share
cores and the true bound is higher. Over TCP it is the same figure, looser still: the kernel
copies every byte at least twice (into the socket buffer and out of it).

--transport shm (compare_peers.sh -t shm): hcomm and MPI only, no Gloo columns; the allreduce
table adds, for hcomm and MPI from 64 KiB, busbw/memcpy: the nccl-tests bus bandwidth
(bytes / time * 2(n-1)/n) over the memcpy bandwidth (= bound_us / time).
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
# The column of an op whose Gloo runs all failed (so no result names its algorithm).
GLOO_ALGO = {"allreduce": "ring", "broadcast": "one_to_all", "allgather": "ring",
             "reduce_scatter": "halving_doubling", "alltoall": "pairwise"}
SHORT = {"halving_doubling": "hd"}  # table only; the JSON keeps Gloo's names
BUSBW_FROM = 65536  # -t shm allreduce busbw/memcpy: below, times are latency, not bandwidth
# The memory-bound time's factor F(op, n) (module docstring) and how the heading spells it.
BOUND_FACTOR = {
    "allreduce": (lambda n: 2 * (n - 1) / n, "2(n-1)/n x size"),
    "broadcast": (lambda n: 1.0 if n > 1 else 0.0, "size (every non-root rank receives it all)"),
    "allgather": (lambda n: (n - 1) / n, "(n-1)/n x size (all blocks but a rank's own)"),
    "reduce_scatter": (lambda n: (n - 1) / n,
                       "(n-1)/n x size (the other ranks' contributions to a rank's block)"),
    "alltoall": (lambda n: (n - 1) / n, "(n-1)/n x size (all blocks but a rank's own)"),
}


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


def bound_us(op, size, ranks, gbps):
    """The memory-bound time (module docstring), us; None without a memcpy bandwidth."""
    return BOUND_FACTOR[op][0](ranks) * size / (gbps * 1e3) if gbps else None


def summarize(args):
    runs = pathlib.Path(args.runs)
    shm = args.transport == "shm"
    libs = SHM_LIBS if shm else LIBS
    summary = {"ranks": args.ranks, "rounds": args.rounds, "dtype": "float32", "redop": "sum",
               "transport": TRANSPORT[args.transport], "cpu_model": args.cpu,
               "bound_us_definition": {
                   op: "bound_factor x bytes / memcpy bandwidth at that size; bound_factor x bytes"
                       " = the bytes each rank must receive, " + BOUND_FACTOR[op][1]
                   for op in args.ops.split(",")},
               "results": []}
    memcpy = load_memcpy(runs, args.rounds, args.memcpy)
    summary["memcpy_gbps"] = {str(b): g for b, g in memcpy.items()}
    ok = None not in memcpy.values()
    for op in args.ops.split(","):
        rows = []
        for size in args.op_sizes[op]:
            row = {"op": op, "bytes": size, "wrong": {}, "failed": []}
            near = nearest(memcpy, size)
            row["memcpy_bytes"] = near
            row["memcpy_gbps"] = memcpy.get(near)
            row["bound_factor"] = round(BOUND_FACTOR[op][0](args.ranks), 6)
            bound = bound_us(op, size, args.ranks, row["memcpy_gbps"])
            row["bound_us"] = None if bound is None else round(bound, 6)
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
                for lib in libs:
                    bw = busbw_gbps(size, row[f"{lib}_us"], args.ranks)
                    row[f"{lib}_busbw_gbps"] = None if bw is None else round(bw, 3)
                    row[f"{lib}_busbw_over_memcpy"] = (ratio(bw, row["memcpy_gbps"])
                                                       if size >= BUSBW_FROM else None)
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
    """Size, memcpy bandwidth, memory-bound time, hcomm, MPI and their ratio: how every table
    line starts."""
    if r["memcpy_bytes"] is None:
        gbps = bound = "-"
    elif r["memcpy_gbps"] is None:
        gbps = bound = "FAIL"
    else:
        gbps, bound = f"{r['memcpy_gbps']:.1f}", f"{r['bound_us']:.{bound_digits(r['bound_us'])}f}"
    return [human(r["bytes"]), gbps, bound, cell(r, r["hcomm_us"], "hcomm"),
            cell(r, r["mpi_us"], "mpi"),
            f"{r['hcomm_over_mpi']:.2f}" if r["hcomm_over_mpi"] else "-"]


LEADING_HEAD = ["size", "memcpy_GB/s", "bound_us", "hcomm_us", "mpi_us", "hcomm/mpi"]


def bound_digits(us):
    """Decimals for a bound: three below 1 us (a few bytes' bound is a few ns), else one."""
    return 3 if us < 1 else 1


def print_heading(op, args):
    """The lines above each table: what it is, the CPU, and what memcpy_GB/s and bound_us mean."""
    redop = " sum" if op == "allreduce" else ""
    print(f"\n{op} float32{redop}, {args.ranks} ranks, {HEADING[args.transport]}, "
          f"median of {args.rounds} rounds (us)")
    print(f"CPU: {args.cpu}; memcpy_GB/s: single-thread memcpy bandwidth at that size "
          "(median of rounds)")
    tcp = ("; over TCP a looser bound (the kernel copies each byte at least twice)"
           if args.transport == "tcp" else "")
    print(f"bound_us: memory-bound time: the bytes each rank must receive, {BOUND_FACTOR[op][1]},"
          f" at that memcpy bandwidth{tcp}")


def print_table(op, rows, args):
    found = {a for r in rows for a in r["gloo_us"]}
    algos = [a for a in GLOO_ORDER if a in found] + sorted(found - set(GLOO_ORDER))
    algos = algos or [GLOO_ALGO[op]]
    show_best = len(algos) > 1
    head = LEADING_HEAD + [f"gloo_{SHORT.get(a, a)}" for a in algos]
    head += (["gloo_best", "best"] if show_best else []) + ["hcomm/gloo", "wrong(h/m/g)"]
    print_heading(op, args)
    table = [head]
    for r in rows:
        line = leading_cells(r)
        line += [cell(r, r["gloo_us"].get(a), "gloo") if a in r["gloo_us"] or "gloo" in r["failed"]
                 else "-" for a in algos]
        if show_best:
            line += [cell(r, r["gloo_best_us"], "gloo"), SHORT.get(r["gloo_best_algo"], r["gloo_best_algo"] or "-")]
        line.append(f"{r['hcomm_over_gloo']:.2f}" if r["hcomm_over_gloo"] else "-")
        line.append("/".join(str(r["wrong"][lib]) for lib in LIBS))
        table.append(line)
    print_aligned(table)


def print_shm_table(op, rows, args):
    """-t shm: hcomm and MPI; for allreduce also each one's busbw/memcpy."""
    bw = op == "allreduce"
    head = LEADING_HEAD + (["hcomm_busbw/memcpy", "mpi_busbw/memcpy"] if bw else [])
    head.append("wrong(h/m)")
    print_heading(op, args)
    if bw:
        print("busbw/memcpy (from 64 KiB): bus bandwidth (bytes / time * 2(n-1)/n) over "
              "memcpy_GB/s, i.e. bound_us / time")
    table = [head]
    for r in rows:
        line = leading_cells(r)
        if bw:
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
                   help="comma-separated sizes with memcpy_bw results")
    p.add_argument("--cpu", default="unknown", help="the CPU model, for the headings and JSON")
    p.add_argument("--op-sizes", action="append", default=[], metavar="OP=BYTES,...",
                   help="the sizes of one op's table (one per op of --ops)")
    args = p.parse_args()
    args.op_sizes = {op: [int(b) for b in sizes.split(",")]
                     for op, sizes in (v.split("=", 1) for v in args.op_sizes)}
    missing = set(args.ops.split(",")) - set(args.op_sizes)
    if missing:
        p.error(f"no --op-sizes for {', '.join(sorted(missing))}")
    sys.exit(summarize(args))


if __name__ == "__main__":
    main()
