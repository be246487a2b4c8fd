#!/usr/bin/env bash
# hcomm-info alone and as a world of 4 ranks on 2 "hosts" (HCOMM_HOST_ID per rank pair): the
# host grouping, the transport matrix and the algorithm table must come out right.
# Usage: hcomm_info.sh HCOMM_RUN HCOMM_INFO
set -euo pipefail
run=$1
info=$2
fail() { echo "hcomm_info: $*" >&2; exit 1; }

alone=$("$info")
grep -q "^host " <<<"$alone" || fail "no host line alone: $alone"
grep -q "not launched as a world" <<<"$alone" || fail "no hint alone: $alone"

# --config: every variable with its value in force; a set one that does not parse exits 2.
config=$(env -u HCOMM_NUM_QPS HCOMM_SPIN_US=200 "$info" --config) || fail "--config failed"
grep -qE '^HCOMM_SPIN_US +200 +environment +-1 ' <<<"$config" || fail "--config: $config"
grep -qE '^HCOMM_NUM_QPS +1 +default +1 ' <<<"$config" || fail "--config: $config"
set +e
bad=$(HCOMM_NUM_QPS=17 "$info" --config 2>&1 >/dev/null)
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "--config with HCOMM_NUM_QPS=17 exited $rc, not 2"
grep -q "HCOMM_NUM_QPS='17' is out of range" <<<"$bad" || fail "--config's message: $bad"

world=$("$run" -n 4 --timeout 60 bash -c \
  'HCOMM_HOST_ID=testhost$((HCOMM_RANK / 2)) exec "$0"' "$info")
grep -q "communicator: 4 ranks" <<<"$world" || fail "no rank table: $world"
# Ranks 0,1 share a host, as do 2,3: shared memory within ('s'), tcp across ('T') hosts.
row0=$(grep -E '^\[0\] +0 +- +s +T +T$' <<<"$world") || fail "rank 0's row is wrong: $world"
row3=$(grep -E '^\[0\] +3 +T +T +s +-$' <<<"$world") || fail "rank 3's row is wrong: $world"
# Whatever the library names (hcomm-info --algorithms: "op: a, b, ..." lines) may head the row.
names=$("$info" --algorithms | grep -v '^#' | sed 's/^[^:]*: //; s/, /\n/g' | sort -u | paste -sd'|')
[ -n "$names" ] || fail "hcomm-info --algorithms listed nothing"
grep -qE "^\[0\] allreduce +($names)( |\$)" <<<"$world" || fail "no algorithm table ($names): $world"
grep -qE '^\[0\] ring order .*: 0 1 2 3$' <<<"$world" || fail "grouped hosts: ring order: $world"

# Hosts interleaved (rank % 2): rings go 0 2 | 1 3, crossing between hosts twice, not four times.
mixed=$("$run" -n 4 --timeout 60 bash -c \
  'HCOMM_HOST_ID=testhost$((HCOMM_RANK % 2)) exec "$0"' "$info")
grep -qE '^\[0\] ring order .*: 0 2 1 3$' <<<"$mixed" || fail "interleaved: ring order: $mixed"
echo "hcomm_info: ok ($row0 / $row3)"
