#!/usr/bin/env bash
# compare_mpi.sh: hcomm allreduce against MPI_Allreduce, side by side, on one host over TCP
# loopback.
#
# Usage: bench/compare_mpi.sh [-r ROUNDS] [-n RANKS] [BYTES...]
#   -r ROUNDS  rounds of alternating hcomm and MPI runs (default 3)
#   -n RANKS   ranks per run (default 2)
#   BYTES      message sizes in bytes, multiples of 4 (default 8 64Ki 1Mi 16Mi 64Mi)
#
# Installs Open MPI when missing, brings build/ up to date (scripts/setup.sh), builds
# bench/build/allreduce_hcomm (against build/libhcomm.a) and bench/build/allreduce_mpi (mpicc),
# then, per round and size, runs
# hcomm then MPI. Alternating within a round spreads slow spells of a shared machine over both.
# Each run times float32 sum allreduce, out of place, with a barrier before each timed
# iteration, and reports the median iteration (rank 0's clock); the table shows the median over
# rounds, the ratio hcomm/MPI (> 1: hcomm is slower) and wrong result elements (hcomm/MPI, summed
# over iterations, ranks and rounds). Iterations scale with size: 256 MiB / BYTES, clamped to
# 10..200, plus a tenth as warm-up (at least 2); the default run takes about 20 s on 2 cores.
#
# MPI runs with `--mca btl self,tcp --mca btl_tcp_if_include lo --mca pml ob1`: TCP over
# loopback, no shared memory, which is the path hcomm's TCP transport takes. A run that fails or
# passes the per-run timeout is shown with its command and output and marked FAIL in the table;
# the script then exits 1.
set -euo pipefail

rounds=3
ranks=2
run_timeout_s=120
while getopts "r:n:h" opt; do
  case "$opt" in
    r) rounds=$OPTARG ;;
    n) ranks=$OPTARG ;;
    *) awk 'NR > 1 && !/^#/ { exit } NR > 1 { print substr($0, 3) }' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(8 65536 1048576 16777216 67108864)

bench_dir=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$bench_dir")
out="$bench_dir/build"
mkdir -p "$out"

# The peer and the project, both from Debian's packages; the build is incremental.
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  sudo_cmd=""
  [[ $(id -u) -eq 0 ]] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
fi
bash "$root/scripts/setup.sh"
g++ -O2 -std=c++17 -Wall -Wextra -I"$root/include" "$bench_dir/allreduce_hcomm.cpp" \
  "$root/build/libhcomm.a" -lcaf_core -libverbs -lrdmacm -lzstd -pthread \
  -o "$out/allreduce_hcomm"
mpicc -O2 -Wall -Wextra "$bench_dir/allreduce_mpi.c" -o "$out/allreduce_mpi"

iters_for() {  # timed iterations for $1 bytes: about 256 MiB moved, within 10..200
  local n=$(((256 << 20) / $1))
  ((n < 10)) && n=10
  ((n > 200)) && n=200
  echo "$n"
}

human() {  # 65536 -> "64 KiB"
  local b=$1 unit
  for unit in B KiB MiB GiB; do
    if ((b < 1024 || b % 1024 != 0)) || [[ $unit == GiB ]]; then
      echo "$b $unit"
      return
    fi
    b=$((b / 1024))
  done
}

median() {  # of the space-separated values in $1; upper median for an even count, as in the C code
  tr -s ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g |
    awk '{ v[NR] = $1 } END { print v[int(NR / 2) + 1] }'
}

# run LIB BYTES: one launch for one size; adds its median to results[LIB,BYTES] and its wrong
# count to wrongs[LIB,BYTES], or sets failed[LIB,BYTES] and shows the command and its output.
declare -A results wrongs failed
run() {
  local lib=$1 bytes=$2 iters warmup cmd output line rc wrong
  iters=$(iters_for "$bytes")
  warmup=$((iters / 10 > 2 ? iters / 10 : 2))
  if [[ $lib == hcomm ]]; then
    cmd=("$root/build/tools/hcomm-run" -n "$ranks" --timeout "$run_timeout_s"
      "$out/allreduce_hcomm" -w "$warmup" -n "$iters" "$bytes")
  else
    # shellcheck disable=SC2054 # "self,tcp" is one mpirun argument
    cmd=(timeout "$run_timeout_s" mpirun --allow-run-as-root --oversubscribe -n "$ranks"
      --mca btl self,tcp --mca btl_tcp_if_include lo --mca pml ob1
      "$out/allreduce_mpi" -w "$warmup" -n "$iters" "$bytes")
  fi
  rc=0
  output=$("${cmd[@]}" 2>&1) || rc=$?
  line=$(grep -E "(^|\] )$lib allreduce bytes=$bytes " <<<"$output" || true)
  if ((rc == 0)) && [[ -n $line ]]; then
    results[$lib,$bytes]+=" $(sed -E 's/.*median_us=([0-9.]+).*/\1/' <<<"$line")"
    wrong=$(sed -E 's/.*wrong=([0-9]+).*/\1/' <<<"$line")
    wrongs[$lib,$bytes]=$((${wrongs[$lib,$bytes]:-0} + wrong))
  else
    failed[$lib,$bytes]=1
    printf '%s run FAILED (exit %d): %s\n%s\n' "$lib" "$rc" "${cmd[*]}" "$output" >&2
  fi
}

for ((round = 1; round <= rounds; ++round)); do
  for bytes in "${sizes[@]}"; do
    run hcomm "$bytes"
    run mpi "$bytes"
  done
  echo "round $round/$rounds done" >&2
done

status=0
printf '\nallreduce float32 sum, %d ranks, TCP loopback, median of %d rounds (us)\n' \
  "$ranks" "$rounds"
printf '%-9s %12s %12s %10s %s\n' size hcomm_us mpi_us hcomm/mpi 'wrong(hcomm/mpi)'
for bytes in "${sizes[@]}"; do
  h=FAIL m=FAIL ratio=-
  [[ -n ${failed[hcomm,$bytes]:-} ]] || h=$(median "${results[hcomm,$bytes]}")
  [[ -n ${failed[mpi,$bytes]:-} ]] || m=$(median "${results[mpi,$bytes]}")
  if [[ $h == FAIL || $m == FAIL ]]; then
    status=1
  else
    ratio=$(awk -v h="$h" -v m="$m" 'BEGIN { printf "%.2f", h / m }')
  fi
  w="${wrongs[hcomm,$bytes]:-0}/${wrongs[mpi,$bytes]:-0}"
  [[ $w == 0/0 ]] || status=1
  printf '%-9s %12s %12s %10s %s\n' "$(human "$bytes")" "$h" "$m" "$ratio" "$w"
done
exit $status
