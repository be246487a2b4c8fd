#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz: tests/fuzz/run.sh [SECONDS_PER_TARGET (60)] [TARGET...]
# (targets: store_wire tcp_hello tcp_stream shm_cells topology_file config auth_handshake;
# default all). Configures and builds build-fuzz with clang (HCOMM_FUZZ=ON), replays every input
# kept in regressions/<target>/ (none may fail), then fuzzes each target for the given seconds on
# a copy of corpus/<target>/, HCOMM_FUZZ_PARALLEL (2) targets at a time. An input that crashes,
# leaks or hangs is saved into regressions/<target>/ and the script exits 1. Prints one line per
# target: executions, coverage (libFuzzer's cov: and ft:) and corpus size. HCOMM_FUZZ_BUILD and
# HCOMM_FUZZ_JOBS (2) override the build directory and the build's parallelism.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${1:-60}
[[ $# -gt 0 ]] && shift
all=(store_wire tcp_hello tcp_stream shm_cells topology_file config auth_handshake)
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=("${all[@]}")
build=${HCOMM_FUZZ_BUILD:-$root/build-fuzz}
jobs=${HCOMM_FUZZ_JOBS:-2}
parallel=${HCOMM_FUZZ_PARALLEL:-2}

max_len() {
  case $1 in
    store_wire) echo 4096 ;;
    tcp_hello) echo 1024 ;;
    tcp_stream) echo 8192 ;;
    shm_cells) echo 4096 ;;
    topology_file) echo 2048 ;;
    config) echo 256 ;;
    auth_handshake) echo 512 ;;
    *) echo "run.sh: unknown target $1 (known: ${all[*]})" >&2; exit 2 ;;
  esac
}
for t in "${targets[@]}"; do max_len "$t" >/dev/null; done

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DHCOMM_FUZZ=ON -DHCOMM_BUILD_TESTS=OFF \
  -DHCOMM_BUILD_PYTHON=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$jobs" --target "${targets[@]/%/_fuzz}" >/dev/null

bin() { echo "$build/tests/fuzz/$1_fuzz"; }
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0}
status=0

# The inputs that once failed must pass.
for t in "${targets[@]}"; do
  shopt -s nullglob
  kept=("$here/regressions/$t"/*)
  shopt -u nullglob
  [[ ${#kept[@]} -eq 0 ]] && continue
  if ! "$(bin "$t")" -rss_limit_mb=2048 -timeout=10 "${kept[@]}" >"$build/replay-$t.log" 2>&1; then
    echo "$t: a kept regression fails again (see $build/replay-$t.log)"
    status=1
  fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/hcomm-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
fuzz_one() {
  local t=$1
  mkdir -p "$work/$t/corpus" "$work/$t/artifacts"
  cp "$here/corpus/$t"/* "$work/$t/corpus/" 2>/dev/null || true
  "$(bin "$t")" -max_len="$(max_len "$t")" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/$t/artifacts/" \
    "$work/$t/corpus" >"$work/$t/log" 2>&1 || true
}
running=0
for t in "${targets[@]}"; do
  if [[ $running -ge $parallel ]]; then
    wait -n
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait

for t in "${targets[@]}"; do
  log=$work/$t/log
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corpus=$(find "$work/$t/corpus" -type f | wc -l)
  line="$t: ${execs:-?} executions, cov ${cov:-?}, ft ${ft:-?}, corpus $corpus files"
  shopt -s nullglob
  found=("$work/$t/artifacts"/*)
  shopt -u nullglob
  if [[ ${#found[@]} -gt 0 ]]; then
    mkdir -p "$here/regressions/$t"
    cp "${found[@]}" "$here/regressions/$t/"
    line+=", FAILED: kept ${found[*]##*/} in tests/fuzz/regressions/$t/"
    cp "$log" "$build/fuzz-$t.log"
    status=1
  elif [[ -z $execs ]]; then
    line+=", FAILED: no final stats (log: $build/fuzz-$t.log)"
    cp "$log" "$build/fuzz-$t.log"
    status=1
  fi
  echo "$line"
done
exit $status
