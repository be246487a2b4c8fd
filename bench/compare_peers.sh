#!/usr/bin/env bash
# compare_peers.sh: hcomm against Open MPI and Gloo, side by side, on one host over TCP loopback
# (or hcomm against Open MPI over shared memory, -t shm).
#
# Usage: bench/compare_peers.sh [-t tcp|shm] [-r ROUNDS] [-n RANKS] [-o OPS] [-b MIN] [-e MAX]
#                               [-f FACTOR] [-J SUMMARY.json]
#   -t MODE    transport compared: tcp (default: TCP loopback, hcomm, MPI and Gloo) or shm
#              (shared memory, hcomm and MPI only: Gloo has no shared-memory transport)
#   -r ROUNDS  rounds of alternating hcomm, MPI (and Gloo) runs, at least 3 (default 3)
#   -n RANKS   ranks per run (default 2; more ranks than cores works, just slower)
#   -o OPS     comma-separated, of allreduce, broadcast, allgather, reduce_scatter, alltoall, or
#              all for those five (default: allreduce,broadcast,allgather)
#   -b MIN, -e MAX, -f FACTOR
#              sizes in bytes: MIN, MIN*FACTOR, ... up to MAX, plus MAX, 64 KiB and 1 MiB when
#              within MIN..MAX (default 8, 64 MiB, 8: 8 B, 64 B, ... 16 MiB, 64 KiB, 1 MiB, 64 MiB).
#              allgather, reduce_scatter and alltoall round each size down to whole blocks of
#              RANKS floats (a multiple of 4*RANKS), as nccl-tests and hcomm-bench do, and leave
#              out a size with no whole block (8 B on 4 ranks)
#   -J FILE    also write every figure of the tables as JSON
#
# Installs what is missing (openmpi-bin libopenmpi-dev libgloo-dev python3), brings build/ up to
# date (scripts/setup.sh), builds bench/build/mpi_bench (bench/peers/mpi_bench.c, mpicc),
# bench/build/gloo_bench (bench/peers/gloo_bench.cpp, -lgloo) and bench/build/memcpy_bw
# (bench/peers/memcpy_bw.c, gcc -O2), then, per round, op and size, runs hcomm-bench, mpi_bench
# and gloo_bench one after the other (starting with a different one each round): alternating
# spreads a shared machine's slow spells over all three.
#
# What each library runs: hcomm-bench OP; Open MPI MPI_Allreduce, MPI_Bcast, MPI_Allgather,
# MPI_Reduce_scatter_block, MPI_Alltoall; Gloo allreduce ring, halving_doubling and bcube,
# BroadcastOneToAll, AllgatherRing, ReduceScatterHalvingDoubling and gloo::alltoall (pairwise).
# Sizes follow nccl-tests, as hcomm-bench defines them: the larger of one rank's send and receive
# buffers. allgather: the receive buffer (RANKS blocks; each rank sends one); reduce_scatter: the
# send buffer (RANKS blocks; rank r receives block r of the sum); alltoall: either buffer (RANKS
# blocks, block q to and from rank q).
# Gloo's alltoall over TCP loopback stalls from 64 KiB blocks on (on the 2-core VM this was
# written on, 2 ranks: 44 ms at 128 KiB, 0.35 s at 1 MiB, 10 s at 16 MiB; its other ops are not
# affected), and at 64 MiB it exceeds Gloo's 30 s operation timeout, which shows as FAIL: keep -e
# to a few MiB for alltoall over TCP.
#
# All three time alike (bench/peers/timing.h, tools/bench/runner.cpp): float32 sum, warm-up
# iterations, a barrier, then iterations back to back, each timed alone; a run's time is the
# slowest rank's median iteration. Iterations scale with size: 256 MiB / BYTES, within 10..200,
# plus a tenth as warm-up (at least 2). Each run then checks one more iteration element by
# element. The table (bench/peers/summarize.py) shows the median over rounds per library and
# Gloo allreduce algorithm (ring, halving_doubling, bcube; bcube only for an even rank count),
# the ratios hcomm/MPI and hcomm/best Gloo algorithm (> 1: hcomm is slower), and wrong elements
# summed over rounds (h/m/g: hcomm/MPI/Gloo).
#
# Each round also measures this machine's single-thread memcpy bandwidth (memcpy_bw) at every
# size of the tables. Each table is headed by the CPU model (lscpu's Model name) and starts, after
# the size, with memcpy_GB/s (median over rounds) and bound_us, the memory-bound time: the bytes
# that must reach each rank from the others, F x size, at that memcpy bandwidth, each counted as
# one memcpy. F is nccl-tests' bus factor: allreduce 2(n-1)/n, broadcast 1, allgather,
# reduce_scatter and alltoall (n-1)/n. Over shared memory with a core per rank that is a
# practical lower bound for a copy-based implementation; over TCP the same figure is printed, a
# looser bound there (the kernel copies every byte at least twice); with more ranks than cores it
# is not a bound (the ranks share the cores). The JSON (-J) has every figure of the tables, the CPU
# model and the memcpy bandwidths.
#
# -t tcp: MPI runs with `--mca btl self,tcp --mca btl_tcp_if_include lo --mca pml ob1` (TCP over
# loopback, no shared memory: the path hcomm's TCP transport takes), hcomm with
# HCOMM_TRANSPORT=tcp; Gloo uses its TCP transport on 127.0.0.1.
# -t shm: MPI runs with `--mca btl self,vader --mca pml ob1` (vader: shared memory), hcomm with
# HCOMM_TRANSPORT=auto (its shared-memory transport for ranks on one host). Gloo is skipped,
# neither installed, built nor run (it has no shared-memory transport), so the table has no Gloo
# columns. The allreduce table adds, from 64 KiB (below, times are latency, not bandwidth), for
# hcomm and MPI, busbw/memcpy: the nccl-tests bus bandwidth, BYTES / time * 2(RANKS-1)/RANKS,
# over the memcpy bandwidth at that size (1: one core's memcpy; = bound_us / time).
#
# A run that fails is shown with its command and output and marked FAIL, and the script exits 1,
# as it does when any result is wrong. Each run's JSON stays in bench/build/runs/.
set -euo pipefail

transport=tcp
rounds=3
ranks=2
ops=allreduce,broadcast,allgather
min_bytes=8
max_bytes=$((64 << 20))
factor=8
summary_json=""
run_timeout_s=300
while getopts "t:r:n:o:b:e:f:J:h" opt; do
  case "$opt" in
    t) transport=$OPTARG ;;
    r) rounds=$OPTARG ;;
    n) ranks=$OPTARG ;;
    o) ops=$OPTARG ;;
    b) min_bytes=$OPTARG ;;
    e) max_bytes=$OPTARG ;;
    f) factor=$OPTARG ;;
    J) summary_json=$(realpath -m "$OPTARG") ;;
    *) awk 'NR > 1 && !/^#/ { exit } NR > 1 { print substr($0, 3) }' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
usage_error() { echo "compare_peers.sh: $1 (-h for help)" >&2; exit 2; }
[[ $# -eq 0 ]] || usage_error "unexpected argument $1"
[[ $transport =~ ^(tcp|shm)$ ]] || usage_error "-t: tcp or shm, not $transport"
for v in "$rounds" "$ranks" "$min_bytes" "$max_bytes" "$factor"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || usage_error "not a positive integer: $v"
done
((rounds >= 3)) || usage_error "-r: at least 3 rounds, so that a median means something"
((factor >= 2 && min_bytes <= max_bytes)) || usage_error "need FACTOR >= 2 and MIN <= MAX"
((min_bytes % 4 == 0 && max_bytes % 4 == 0)) || usage_error "sizes are float32: multiples of 4"
[[ $ops == all ]] && ops=allreduce,broadcast,allgather,reduce_scatter,alltoall
IFS=, read -ra op_list <<<"$ops"
for op in "${op_list[@]}"; do
  [[ $op =~ ^(allreduce|broadcast|allgather|reduce_scatter|alltoall)$ ]] ||
    usage_error "unknown op $op"
done

# The sweep, plus the sizes the README quotes, which a sweep by 8 from 8 would step over.
sizes=()
for ((b = min_bytes; b <= max_bytes; b *= factor)); do sizes+=("$b"); done
for b in 65536 1048576 "$max_bytes"; do
  ((b >= min_bytes && b <= max_bytes)) && sizes+=("$b")
done
mapfile -t sizes < <(printf '%s\n' "${sizes[@]}" | sort -nu)
# Each op's sizes: the block ops' rounded down to whole blocks of RANKS floats (nccl-tests'
# rounding, which hcomm-bench applies too), so that all three libraries get the same count and
# the table shows the bytes really moved; a size with no whole block is left out.
declare -A op_sizes
for op in "${op_list[@]}"; do
  unit=4
  [[ $op =~ ^(allgather|reduce_scatter|alltoall)$ ]] && unit=$((4 * ranks))
  list=()
  for b in "${sizes[@]}"; do
    if ((b / unit == 0)); then
      echo "compare_peers: $op: $b B holds no whole float per rank block on $ranks ranks;" \
        "skipped" >&2
    else
      list+=($((b / unit * unit)))
    fi
  done
  ((${#list[@]} > 0)) || usage_error "$op: no size of -b..-e holds $ranks floats"
  op_sizes[$op]=$(printf '%s\n' "${list[@]}" | sort -nu | paste -sd,)
done
# The memcpy yardstick: every size of every table.
mapfile -t memcpy_sizes < <(printf '%s\n' "${op_sizes[@]}" | tr , '\n' | sort -nu)

# What each mode runs. hcomm's transport is set explicitly either way, so that -t tcp stays TCP
# whatever hcomm's default; -t shm lets hcomm pick (shared memory for ranks on one host).
if [[ $transport == shm ]]; then
  libs=(hcomm mpi)
  peer_packages=(openmpi-bin libopenmpi-dev python3)
  hcomm_transport=auto
  # shellcheck disable=SC2054 # "self,vader" is one mpirun argument
  mpi_transport=(--mca btl self,vader --mca pml ob1)
  echo "compare_peers: -t shm: Gloo has no shared-memory transport; it is skipped" >&2
else
  libs=(hcomm mpi gloo)
  peer_packages=(openmpi-bin libopenmpi-dev libgloo-dev python3)
  hcomm_transport=tcp
  # shellcheck disable=SC2054 # "self,tcp" is one mpirun argument
  mpi_transport=(--mca btl self,tcp --mca btl_tcp_if_include lo --mca pml ob1)
fi

bench_dir=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$bench_dir")
peers="$bench_dir/peers"
out="$bench_dir/build"
runs="$out/runs"
mkdir -p "$out"
rm -rf "$runs"
mkdir "$runs"

# The peers, from Debian's packages; the hcomm build is incremental.
missing=()
for p in "${peer_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  echo "compare_peers: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
bash "$root/scripts/setup.sh" >&2  # stdout: the table only
hcomm_run="$root/build/tools/hcomm-run"
hcomm_bench="$root/build/tools/hcomm-bench"
# Rebuilt only when a source is newer: the Gloo program takes seconds to compile.
if [[ ! $out/mpi_bench -nt $peers/mpi_bench.c || ! $out/mpi_bench -nt $peers/timing.h ]]; then
  mpicc -O2 -Wall -Wextra "$peers/mpi_bench.c" -o "$out/mpi_bench"
fi
if [[ $transport == tcp ]] &&
  [[ ! $out/gloo_bench -nt $peers/gloo_bench.cpp || ! $out/gloo_bench -nt $peers/timing.h ]]; then
  g++ -O2 -std=c++17 -Wall -Wextra "$peers/gloo_bench.cpp" -lgloo -pthread -o "$out/gloo_bench"
fi
if [[ ! $out/memcpy_bw -nt $peers/memcpy_bw.c ]]; then
  gcc -O2 -Wall -Wextra "$peers/memcpy_bw.c" -o "$out/memcpy_bw"
fi

# run LIB OP BYTES ROUND: one launch, which leaves $runs/ROUND.LIB.OP.BYTES.json; on failure
# shows the command and its output, removes that file and sets status=1.
status=0
run() {
  local lib=$1 op=$2 bytes=$3 round=$4 iters warmup json store="" cmd output rc=0
  json="$runs/$round.$lib.$op.$bytes.json"
  iters=$(((256 << 20) / bytes))
  ((iters < 10)) && iters=10
  ((iters > 200)) && iters=200
  warmup=$((iters / 10 > 2 ? iters / 10 : 2))
  case $lib in
    hcomm)
      cmd=(env HCOMM_TRANSPORT="$hcomm_transport"
        "$hcomm_run" -n "$ranks" --timeout "$run_timeout_s" "$hcomm_bench" "$op" -b "$bytes"
        -e "$bytes" -f 2 -n "$iters" -w "$warmup" -c 1 -d float32 -o sum -r 0 -J "$json") ;;
    mpi)
      cmd=(timeout "$run_timeout_s" mpirun --allow-run-as-root --oversubscribe -np "$ranks"
        "${mpi_transport[@]}"
        "$out/mpi_bench" "$op" "$bytes" -n "$iters" -w "$warmup" -J "$json") ;;
    gloo)
      store=$(mktemp -d)  # Gloo's rendezvous; must start empty
      cmd=("$hcomm_run" -n "$ranks" --timeout "$run_timeout_s" "$out/gloo_bench" "$op" "$bytes"
        -n "$iters" -w "$warmup" -J "$json" -S "$store") ;;
  esac
  output=$("${cmd[@]}" 2>&1) || rc=$?
  [[ -z $store ]] || rm -rf "$store"
  if ((rc != 0)) || [[ ! -s $json ]]; then
    status=1
    rm -f "$json"  # a failed launch may leave it empty or partial; missing shows as FAIL
    printf '%s run FAILED (exit %d): %s\n%s\n' "$lib" "$rc" "${cmd[*]}" "$output" >&2
  fi
}

# measure_memcpy BYTES ROUND: one memcpy_bw run, into $runs/ROUND.memcpy.BYTES.json; on failure
# as run().
measure_memcpy() {
  local bytes=$1 round=$2 json output rc=0
  json="$runs/$round.memcpy.$bytes.json"
  output=$(timeout "$run_timeout_s" "$out/memcpy_bw" "$bytes" 2>&1 >"$json") || rc=$?
  if ((rc != 0)) || [[ ! -s $json ]]; then
    status=1
    rm -f "$json"
    printf 'memcpy run FAILED (exit %d): %s %s\n%s\n' "$rc" "$out/memcpy_bw" "$bytes" "$output" >&2
  fi
}

for ((round = 1; round <= rounds; ++round)); do
  for bytes in "${memcpy_sizes[@]}"; do measure_memcpy "$bytes" "$round"; done
  for op in "${op_list[@]}"; do
    for bytes in ${op_sizes[$op]//,/ }; do
      # Each round starts with another library, so none always runs first (or after another).
      for ((k = 0; k < ${#libs[@]}; ++k)); do
        run "${libs[(round + k) % ${#libs[@]}]}" "$op" "$bytes" "$round"
      done
    done
  done
  echo "round $round/$rounds done" >&2
done

cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
summary_args=(--runs "$runs" --rounds "$rounds" --ranks "$ranks" --ops "$ops"
  --transport "$transport" --memcpy "$(IFS=,; echo "${memcpy_sizes[*]}")" --cpu "${cpu:-unknown}")
for op in "${op_list[@]}"; do summary_args+=(--op-sizes "$op=${op_sizes[$op]}"); done
[[ -z $summary_json ]] || summary_args+=(--json "$summary_json")
python3 "$peers/summarize.py" "${summary_args[@]}" || status=1
exit $status
