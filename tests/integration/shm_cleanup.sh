#!/usr/bin/env bash
# Shared-memory segments (/dev/shm/hcomm-seg-<comm uid>-<lo>-<hi> per pair of ranks,
# hcomm-seg-<comm uid>-board per single-host communicator) never outlive their run:
#   (a) 2 ranks of example_allreduce SIGKILLed mid-run leave no segment of their communicator;
#   (b) a stale segment whose creator and attacher are dead (a crash between create and attach)
#       is reaped by the next communicator that uses shm; one naming a live process is kept.
# The run's own segments are told apart from those of jobs running in parallel by the
# communicator uid in their names, read from the ranks' /proc/PID/maps while they run.
# Usage: shm_cleanup.sh HCOMM_RUN EXAMPLE_ALLREDUCE
set -u
run=$1 prog=$2
fail() { echo "shm_cleanup: FAIL: $*" >&2; exit 1; }
command -v python3 > /dev/null || fail "python3 is needed to write segment headers"
[ -d /dev/shm ] && [ -w /dev/shm ] || fail "/dev/shm is not a writable directory"
unset HCOMM_TRANSPORT HCOMM_HOST_ID  # both ranks on this host, over shm

# The name prefix the reaper scans (transport/shm/link_segment.cpp: kPrefix).
seg_prefix=hcomm-seg-
marker="hcomm_shm_cleanup_$$"
log=$(mktemp)
uid_dead=$(printf 'dead%012x' $$)  # fake comm uids, unique per run of this script
uid_live=$(printf 'a11e%012x' $$)
fake_dead=/dev/shm/$seg_prefix$uid_dead-0-1
fake_live=/dev/shm/$seg_prefix$uid_live-0-1
launcher=
cleanup() {
  [ -n "$launcher" ] && kill -9 "$launcher" 2> /dev/null
  rm -f "$log" "$fake_dead" "$fake_live"
}
trap cleanup EXIT

# The /dev/shm/hcomm-* objects process $1 has mapped, one name a line (deleted or not).
mapped_segments() {
  grep -o ' /dev/shm/hcomm-[^ ]*' "/proc/$1/maps" 2> /dev/null | sed 's| /dev/shm/||' | sort -u
}

# ---- (a) SIGKILL both ranks in the middle of their allreduces.
echo "shm_cleanup: (a) 2 ranks of example_allreduce, both SIGKILLed mid-run"
before=$(ls /dev/shm | grep '^hcomm-' | sort)
timeout 60 "$run" -n 2 --timeout 50 bash -c "exec -a $marker-\$HCOMM_RANK $prog 80000000" \
  > "$log" 2>&1 &
launcher=$!
# Mid-run: both ranks alive with their pair segment mapped (it shows in /proc/PID/maps, as
# "(deleted)" once the higher rank attached). Bounded: 20 s.
pids=
for _ in $(seq 1 400); do
  p0=$(pgrep -f "^$marker-0" | head -n1) p1=$(pgrep -f "^$marker-1" | head -n1)
  if [ -n "$p0" ] && [ -n "$p1" ] && grep -q " /dev/shm/$seg_prefix.*-0-1" "/proc/$p0/maps" 2> /dev/null \
    && grep -q " /dev/shm/$seg_prefix.*-0-1" "/proc/$p1/maps" 2> /dev/null; then
    pids="$p0 $p1"; break
  fi
  kill -0 "$launcher" 2> /dev/null || break
  sleep 0.05
done
[ -n "$pids" ] || { cat "$log"; fail "the 2 ranks never mapped their pair segment"; }
sleep 0.6  # into the allreduces (80M floats: ~0.1 s per iteration on 2 cores, 11 of them)
kill -0 $pids 2> /dev/null || { cat "$log"; fail "a rank finished before it could be killed"; }
mapped=$( (mapped_segments "$p0"; mapped_segments "$p1") | sort -u)
uids=$(echo "$mapped" | sed -n "s/^$seg_prefix\([0-9a-f]*\)-.*/\1/p" | sort -u)
kill -9 $pids
echo "  killed ranks $p0 and $p1; they had mapped:"
echo "$mapped" | sed 's/^/    /'
[ "$(echo "$uids" | grep -c .)" -eq 1 ] || fail "expected one communicator uid, got: $uids"
wait "$launcher"
rc=$?
launcher=
echo "  hcomm-run exited $rc after the SIGKILLs"
[ "$rc" -ne 0 ] || fail "hcomm-run exited 0 although both ranks were killed"
left=$(pgrep -f "^$marker-" | wc -l)
[ "$left" -eq 0 ] || fail "$left rank processes are left"
after=$(ls /dev/shm | grep '^hcomm-' | sort)
new=$(comm -13 <(echo "$before") <(echo "$after"))
if [ -n "$new" ]; then
  echo "  new hcomm-* entries in /dev/shm since the start (other jobs running in parallel?):"
  echo "$new" | sed 's/^/    /'
fi
ours=$(ls /dev/shm | grep -F "$uids")
[ -z "$ours" ] || fail "segments of the killed communicator $uids are left: $ours"
echo "  no /dev/shm entry of communicator $uids is left"

# ---- (b) stale segments: dead processes are reaped, a live one is kept.
echo "shm_cleanup: (b) a stale segment of dead processes is reaped, one of a live process kept"
true &
dead_pid=$!
wait "$dead_pid"
# Start time (clock ticks since boot) of this shell: field 22 of /proc/$$/stat.
live_ticks=$(python3 -c "
s = open('/proc/$$/stat').read()
print(s[s.rindex(')') + 2:].split()[19])")
[ -n "$live_ticks" ] || fail "cannot read this shell's start time"
# make_segment PATH UID CREATOR_PID CREATOR_TICKS ATTACHER_PID ATTACHER_TICKS STATE
make_segment() {
  python3 - "$@" << 'PY'
import struct, sys
path, uid, cpid, cticks, apid, aticks, state = sys.argv[1:]
cells, cell_bytes = 32, 32 * 1024
size = 4096 + 2 * (4096 + cells * cell_bytes)  # kHeaderArea + 2 rings (link_segment.cpp)
header = struct.pack("<QQIIiiQiiQI", 0x314B4E4C4D434848, int(uid, 16), cells, cell_bytes,
                     int(cpid), 0, int(cticks), int(apid), 0, int(aticks), int(state))
with open(path, "wb") as f:
    f.write(header)
    f.truncate(size)
PY
}
# Created and marked ready by a process that died before the attacher came (attacher: none).
make_segment "$fake_dead" "$uid_dead" "$dead_pid" 1 0 0 1 || fail "cannot write $fake_dead"
# Created by this very shell, still running: must survive.
make_segment "$fake_live" "$uid_live" $$ "$live_ticks" 0 0 1 || fail "cannot write $fake_live"
echo "  made $fake_dead (creator pid $dead_pid, dead) and $fake_live (creator pid $$, alive)"
timeout 60 "$run" -n 2 --timeout 50 "$prog" 1000 > "$log" 2>&1 \
  || { cat "$log"; fail "the 2-rank job after the stale segments failed"; }
grep -q VERIFIED "$log" || { cat "$log"; fail "the 2-rank job did not verify its allreduce"; }
[ ! -e "$fake_dead" ] || fail "$fake_dead (dead creator, no attacher) was not reaped"
echo "  $fake_dead was reaped"
[ -e "$fake_live" ] || fail "$fake_live (creator alive: this shell) was removed"
echo "  $fake_live (live creator) was kept"
rm -f "$fake_live"
echo "shm_cleanup: ok"
