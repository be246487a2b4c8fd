#!/usr/bin/env bash
# DDP over the hcomm backend on 3 ranks, rank 2 SIGKILLed at step 20: ranks 0 and 1 must raise
# RuntimeError naming rank 2 within HCOMM_PEER_TIMEOUT_MS + 1 s (python/tests_torch/kill_rank.py
# checks both), never hang; once on one host (shared memory) and once as 3 hosts (TCP).
# Usage: torch_kill_rank.sh HCOMM_RUN PYTHON BUILD_DIR SOURCE_DIR
set -u
run=$1 python=$2 build=$3 src=$4
for layout in one-host hosts; do
  wrap=()
  [ "$layout" = hosts ] && wrap=(bash -c 'HCOMM_HOST_ID=host$HCOMM_RANK exec "$0" "$@"')
  out=$(timeout 90 "$run" -n 3 --keep-going --timeout 60 "${wrap[@]}" env HCOMM_PEER_TIMEOUT_MS=1500 \
    PYTHONPATH="$build/python" "$python" "$src/python/tests_torch/kill_rank.py" 2>&1)
  rc=$?
  echo "$out" | grep -E "raised|no error|keep-going"
  # hcomm-run reports the killed rank (128 + 9); the survivors must each have raised in time.
  [ "$rc" -eq 137 ] || { echo "$out"; echo "torch_kill_rank ($layout): FAIL: hcomm-run exited $rc"; exit 1; }
  for r in 0 1; do
    grep -qE "^\[$r\] rank $r: raised after .*rank 2" <<<"$out" \
      || { echo "torch_kill_rank ($layout): FAIL: rank $r did not raise naming rank 2"; exit 1; }
  done
  grep -q "2 of 3 ranks exited with code 0" <<<"$out" \
    || { echo "torch_kill_rank ($layout): FAIL: a survivor raised too late or wrongly"; exit 1; }
  echo "torch_kill_rank ($layout): ok"
done
