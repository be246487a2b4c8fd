#!/usr/bin/env bash
# A Python script runs unchanged under the environments other launchers set: torchrun's (RANK,
# WORLD_SIZE, MASTER_ADDR, MASTER_PORT), Open MPI's (OMPI_COMM_WORLD_RANK/SIZE) and Slurm's
# (SLURM_PROCID, SLURM_NTASKS), 2 processes each started here by hand, the root address from
# MASTER_ADDR/MASTER_PORT (or HCOMM_ROOT_ADDR, which mpirun -x and srun --export pass on).
# Usage: launchers.sh PYTHON BUILD_DIR
set -u
python=$1 build=$2
export PYTHONPATH=$build/python
unset HCOMM_RANK HCOMM_WORLD_SIZE HCOMM_ROOT_ADDR RANK WORLD_SIZE MASTER_ADDR MASTER_PORT
script='import numpy as np, hcomm
x = np.full(3, hcomm.get_rank() + 1.0)
hcomm.all_reduce(x)
assert (x == 3).all(), x
print("rank", hcomm.get_rank(), "of", hcomm.get_world_size(), "OK")'
port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
fail() { echo "launchers: FAIL: $*"; exit 1; }

run_pair() {  # NAME VAR=... for rank 0 / rank 1 via the callback `envs R`
  local name=$1 p0 p1 out
  out=$(mktemp)
  envs 0 timeout 60 "$python" -c "$script" > "$out.0" 2>&1 &
  p0=$!
  envs 1 timeout 60 "$python" -c "$script" > "$out.1" 2>&1 &
  p1=$!
  wait $p0 || { cat "$out.0" "$out.1"; fail "$name: rank 0"; }
  wait $p1 || { cat "$out.0" "$out.1"; fail "$name: rank 1"; }
  grep -q "rank 0 of 2 OK" "$out.0" && grep -q "rank 1 of 2 OK" "$out.1" || fail "$name: output"
  echo "launchers: $name: OK"
  rm -f "$out" "$out.0" "$out.1"
}

p=$(port)
envs() { env RANK=$1 LOCAL_RANK=$1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$p "${@:2}"; }
run_pair "torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)"
p=$(port)
envs() { env OMPI_COMM_WORLD_RANK=$1 OMPI_COMM_WORLD_SIZE=2 HCOMM_ROOT_ADDR=127.0.0.1:$p "${@:2}"; }
run_pair "Open MPI (OMPI_COMM_WORLD_RANK/SIZE, HCOMM_ROOT_ADDR)"
p=$(port)
envs() { env SLURM_PROCID=$1 SLURM_NTASKS=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$p "${@:2}"; }
run_pair "Slurm (SLURM_PROCID, SLURM_NTASKS, MASTER_ADDR, MASTER_PORT)"
