#!/usr/bin/env bash
# init_process_group("hcomm") under the launchers torch users have: torchrun (with the workaround
# Debian's torch 1.13 needs on Python 3.11, README "torch.distributed"), running
# examples/python/ddp_train.py on 2 processes; and an explicit c10d store (TCPStore, rank and
# world size passed by hand), 2 processes started here. hcomm-run is python_example_ddp_train.
# Usage: torch_launch.sh PYTHON BUILD_DIR SOURCE_DIR
set -u
python=$1 build=$2 src=$3
export PYTHONPATH=$build/python HCOMM_BENCH_QUICK=1
unset HCOMM_RANK HCOMM_WORLD_SIZE HCOMM_ROOT_ADDR RANK WORLD_SIZE MASTER_ADDR MASTER_PORT
fail() { echo "torch_launch: FAIL: $*"; exit 1; }
port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# 1. torchrun. Plain `torchrun` fails on Python 3.11 (torch 1.13's elastic Std.from_str("0") is
# None); --redirects 1 --tee 1 --log_dir avoids that code path.
out=$(timeout 120 "$python" -m torch.distributed.run --nnodes 1 --nproc_per_node 2 \
  --master_addr 127.0.0.1 --master_port "$(port)" --redirects 1 --tee 1 --log_dir "$dir/torchrun" \
  "$src/examples/python/ddp_train.py" 2>&1)
rc=$?
echo "$out" | grep -E "DDP over hcomm|Error" | head -5
[ "$rc" -eq 0 ] || { echo "$out" | tail -30; fail "torchrun exited $rc"; }
grep -q "parameters equal on all ranks" <<<"$out" || fail "torchrun: no result line from rank 0"
echo "torch_launch: torchrun: OK"

# 2. An explicit store.
p=$(port)
script='import sys, torch, torch.distributed as dist, hcomm.torch
rank, port = int(sys.argv[1]), int(sys.argv[2])
store = dist.TCPStore("127.0.0.1", port, 2, rank == 0)
dist.init_process_group("hcomm", store=store, rank=rank, world_size=2)
t = torch.full((5,), rank + 1.0)
dist.all_reduce(t)
assert torch.equal(t, torch.full((5,), 3.0)), t
assert dist.get_backend() == "hcomm"
dist.barrier()
print("rank", rank, "OK")
dist.destroy_process_group()'
for r in 0 1; do
  timeout 60 "$python" -c "$script" "$r" "$p" > "$dir/store.$r" 2>&1 &
  pids[r]=$!
done
for r in 0 1; do
  wait "${pids[r]}" || { cat "$dir/store.0" "$dir/store.1"; fail "explicit store: rank $r"; }
  grep -q "rank $r OK" "$dir/store.$r" || fail "explicit store: rank $r printed no result"
done
echo "torch_launch: explicit store: OK"
