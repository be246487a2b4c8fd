#!/usr/bin/env python3
"""Figures of the QoS tests from hcomm-bench's tenant-mode JSON files (hcomm-bench -T ... -J).

Each file is one tenant (2 ranks, one per host); each rank recorded (unix time, payload bytes sent
to the other host so far) after an iteration about every 100 ms, plus at its start and end.

  rate FILE                      payload Gbit/s each way over the tenant's whole timed run (mean
                                 of its ranks): for a tenant alone on the link
  shares TOL FILE=TARGET...      the tenants' shares of their total over the window in which all
                                 of them were in their timed runs; PASS when each is within TOL
                                 percentage points of its TARGET (%); exit 1 otherwise
  window FILE                    start and end (unix s) of the tenant's timed run (latest start,
                                 earliest end over its ranks)
  rate_in FILE START END         a tenant's Gbit/s each way within [START, END]
  latency FILE                   "median p99 mean" in us: the largest over the tenant's ranks
"""
import json
import sys


def load(path):
    with open(path) as f:
        doc = json.load(f)
    if doc.get("mode") != "duration" or not doc.get("ranks"):
        sys.exit("%s: not a tenant-mode (-T) result" % path)
    return doc


def bytes_at(samples, t):
    """Cumulative bytes at time t, interpolated linearly between the samples around it."""
    if t <= samples[0][0]:
        return samples[0][1]
    for (t0, b0), (t1, b1) in zip(samples, samples[1:]):
        if t0 <= t <= t1:
            return b0 if t1 == t0 else b0 + (b1 - b0) * (t - t0) / (t1 - t0)
    return samples[-1][1]


def window(doc):
    return (max(r["start_unix"] for r in doc["ranks"]), min(r["end_unix"] for r in doc["ranks"]))


def rate_in(doc, start, end):
    """Gbit/s each way (mean over the ranks: each rank's bytes leave through its own host)."""
    per_rank = [(bytes_at(r["samples"], end) - bytes_at(r["samples"], start)) * 8 / (end - start)
                / 1e9 for r in doc["ranks"]]
    return sum(per_rank) / len(per_rank), per_rank


def qos_name(doc):
    q = doc.get("qos")
    return q["spec"] if q else "(no class)"


def cmd_rate(path):
    doc = load(path)
    print("%.4f" % (sum(r["wire_gbps"] for r in doc["ranks"]) / len(doc["ranks"])))


def cmd_shares(tol, specs):
    tenants = []
    for spec in specs:
        path, target = spec.rsplit("=", 1)
        tenants.append((path, load(path), float(target)))
    start = max(window(d)[0] for _, d, _ in tenants)
    end = min(window(d)[1] for _, d, _ in tenants)
    longest = max(window(d)[1] - window(d)[0] for _, d, _ in tenants)
    print("  common window: %.2f s of the tenants' %.2f s (starts spread over %.0f ms)"
          % (end - start, longest,
             1000 * (start - min(window(d)[0] for _, d, _ in tenants))))
    if end - start < 0.6 * longest:
        print("  FAIL: the tenants ran together for only %.2f s" % (end - start))
        return 1
    rates = [rate_in(d, start, end) for _, d, _ in tenants]
    total = sum(r for r, _ in rates)
    print("  total: %.4f Gbit/s each way (host A -> B %.4f, B -> A %.4f)"
          % (total, sum(p[0] for _, p in rates), sum(p[1] for _, p in rates)))
    failed = 0
    print("  %-28s %8s %9s %9s %14s  %s" % ("class", "target", "achieved", "Gbit/s", "A->B / B->A",
                                            "verdict"))
    for (path, doc, target), (rate, per_rank) in zip(tenants, rates):
        share = 100 * rate / total if total > 0 else 0
        ok = abs(share - target) <= tol
        failed += 0 if ok else 1
        print("  %-28s %7.1f%% %8.1f%% %9.4f %6.1f%%/%.1f%%  %s"
              % (qos_name(doc), target, share, rate,
                 100 * per_rank[0] / sum(p[0] for _, p in rates),
                 100 * per_rank[1] / sum(p[1] for _, p in rates),
                 "PASS" if ok else "FAIL (more than %g points off)" % tol))
    return 1 if failed else 0


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "rate" and len(args) == 1:
        cmd_rate(args[0])
    elif cmd == "shares" and len(args) >= 2:
        return cmd_shares(float(args[0]), args[1:])
    elif cmd == "window" and len(args) == 1:
        print("%.6f %.6f" % window(load(args[0])))
    elif cmd == "rate_in" and len(args) == 3:
        print("%.4f" % rate_in(load(args[0]), float(args[1]), float(args[2]))[0])
    elif cmd == "latency" and len(args) == 1:
        doc = load(args[0])
        print("%.2f %.2f %.2f" % (max(r["median_us"] for r in doc["ranks"]),
                                  max(r["p99_us"] for r in doc["ranks"]),
                                  max(r["mean_us"] for r in doc["ranks"])))
    else:
        sys.exit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
