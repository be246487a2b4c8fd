#!/usr/bin/env bash
# Encrypted TCP links (HCOMM_TLS=1) between two hosts: network namespaces joined by one veth
# pair ("fabric"), one rank on each, tls_traffic (tests/integration/tls_traffic.cpp) sending a
# recognisable ASCII marker by broadcast and send/recv, every result checked. A raw capture on
# host A's fabric (tests/tools/wire_capture.py) counts the frames the marker shows in.
#   plain          no TLS: results right, the marker on the wire (the capture sees plaintext)
#   psk            HCOMM_TLS=1, keys from the job key: results right, the marker nowhere
#   certificates   HCOMM_TLS=1 with a CA and certificates made here: results right, no marker
#   wrong-ca       rank 1's certificate from another CA: both ranks fail, naming the handshake
#   mismatch       rank 1 without HCOMM_TLS: both fail, naming the setting
#   no-key         HCOMM_TLS=1 without a job key or certificates: fails, saying what to set
# Needs root (namespaces, a raw socket), ip, nsenter, unshare, python3 and openssl.
# Usage: tls.sh HCOMM_RUN TLS_TRAFFIC
set -u
run=$1 prog=$2
name=security_tls
here=$(cd "$(dirname "$0")/../.." && pwd)
fail() {
  echo "$name: FAIL: $*"
  [ -n "${log:-}" ] && [ -f "$log" ] && sed 's/^/  job| /' "$log" | head -40
  exit 1
}
# shellcheck source=../skip.sh
. "$here/tests/skip.sh"
# shellcheck source=../netns/veth_hosts.sh
. "$here/tests/netns/veth_hosts.sh"
require_root "to create network namespaces and capture their traffic"
require_tools ip nsenter unshare python3 openssl

dir=$(mktemp -d)
trap 'touch "$dir/stop"; veth_hosts_down; rm -rf "$dir"' EXIT
veth_hosts_up "hctls$$" "fabric:10.83.0.1:10.83.0.2"
veth_hosts_wrapper "$dir/rank.sh" 10.83.0.1
unset HCOMM_TRANSPORT HCOMM_HOST_ID HCOMM_TLS HCOMM_TLS_CERT_FILE HCOMM_TLS_KEY_FILE \
  HCOMM_TLS_CA_FILE HCOMM_JOB_KEY HCOMM_JOB_KEY_FILE
export HCOMM_SOCKET_IFNAME=fabric HCOMM_CONNECT_TIMEOUT_MS=10000 HCOMM_DEBUG=INFO \
  HCOMM_DEBUG_SUBSYS=NET
marker=hcomm-plaintext-marker

# A CA, a certificate it signs (every rank uses the same one), and one from another CA.
make_ca() {  # NAME
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=hcomm test $1" -keyout "$dir/$1.key" -out "$dir/$1.pem" 2> /dev/null
}
make_cert() {  # NAME CA
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=hcomm $1" \
    -keyout "$dir/$1.key" -out "$dir/$1.csr" 2> /dev/null &&
    openssl x509 -req -in "$dir/$1.csr" -CA "$dir/$2.pem" -CAkey "$dir/$2.key" \
      -CAcreateserial -days 2 -out "$dir/$1.pem" 2> /dev/null
}
make_ca ca && make_cert rank ca && make_ca other-ca && make_cert rogue other-ca ||
  fail "openssl could not make the test certificates"

# job CASE ENV RANK1_ENV COMMAND...: the 2-rank job under a capture; sets rc, log, hits, bytes.
# Both ranks run COMMAND under `env ENV`, rank 1 under `env ENV RANK1_ENV`. $launch_opts go to
# hcomm-run (the refused cases pass --keep-going: each rank then fails on its own, and its own
# reason is in the log, however soon the other one gave up).
job() {
  local case=$1 both=$2 rank1=$3
  shift 3
  log=$dir/$case.log
  rm -f "$dir/stop" "$dir/stop.ready"
  ip netns exec "$ns_a" python3 "$here/tests/tools/wire_capture.py" fabric "$dir/stop" \
    "$marker" > "$dir/$case.capture" &
  local capture=$!
  for _ in $(seq 50); do
    [ -f "$dir/stop.ready" ] && break
    sleep 0.1
  done
  [ -f "$dir/stop.ready" ] || fail "$case: the capture did not start"
  # shellcheck disable=SC2016 # expanded by the rank's shell
  "$run" -n 2 --timeout 60 ${launch_opts:-} "$dir/rank.sh" bash -c \
    'e=$0; [ "$HCOMM_RANK" = 1 ] && e="$e $1"; shift; exec env $e "$@"' \
    "$both" "$rank1" "$@" > "$log" 2>&1
  rc=$?
  touch "$dir/stop"
  wait "$capture"
  hits=$(sed -n 's/.*marker in \([0-9]*\) frames/\1/p' "$dir/$case.capture")
  bytes=$(sed -n 's/captured [0-9]* frames, \([0-9]*\) bytes.*/\1/p' "$dir/$case.capture")
  echo "$name: $case: exit $rc; $(cat "$dir/$case.capture")"
}
results_right() {
  [ "$rc" -eq 0 ] || fail "$1: the job failed (exit $rc)"
  [ "$(grep -c '^\[[01]\] DONE [0-9]* 0$' "$log")" -eq 2 ] || fail "$1: a rank's results were wrong"
  [ "${bytes:-0}" -gt $((12 << 20)) ] || fail "$1: only ${bytes:-0} bytes crossed the fabric"
}

job plain "" "" "$prog" 3
results_right plain
[ "${hits:-0}" -gt 0 ] || fail "plain: the marker is not in the capture: the capture sees nothing"

job psk "HCOMM_TLS=1" "" "$prog" 3
results_right psk
[ "${hits:-1}" -eq 0 ] || fail "psk: the marker crossed the fabric in $hits frames: not encrypted"
grep -q "TCP links are encrypted with TLS 1.3 (keys: a key derived from the job key)" "$log" ||
  fail "psk: no rank said its links are encrypted"

certs="HCOMM_TLS=1 HCOMM_TLS_CA_FILE=$dir/ca.pem"
job certificates "$certs HCOMM_TLS_CERT_FILE=$dir/rank.pem HCOMM_TLS_KEY_FILE=$dir/rank.key" "" \
  "$prog" 3
results_right certificates
[ "${hits:-1}" -eq 0 ] || fail "certificates: the marker crossed the fabric in $hits frames"
grep -q "TCP links are encrypted with TLS 1.3 (keys: certificates)" "$log" ||
  fail "certificates: no rank said its links are encrypted with certificates"

launch_opts=--keep-going
job wrong-ca "$certs HCOMM_TLS_CERT_FILE=$dir/rank.pem HCOMM_TLS_KEY_FILE=$dir/rank.key" \
  "HCOMM_TLS_CERT_FILE=$dir/rogue.pem HCOMM_TLS_KEY_FILE=$dir/rogue.key" "$prog" 1
[ "$rc" -ne 0 ] || fail "wrong-ca: a rank with another CA's certificate joined"
# Rank 0 refuses the certificate; rank 1 hears its alert and gives up too.
grep -q '^\[0\] CREATE FAILED.*TLS handshake with .* failed.*certificate verify failed' "$log" ||
  fail "wrong-ca: rank 0 did not name the refused certificate"
grep -q '^\[1\] .*TLS handshake with .* failed' "$log" ||
  fail "wrong-ca: rank 1 did not name the failed TLS handshake"
grep -q '^\[1\] CREATE FAILED' "$log" || fail "wrong-ca: rank 1 did not fail its creation"
grep -m1 'CREATE FAILED' "$log" | sed 's/^/  /'

job mismatch "HCOMM_TLS=1" "HCOMM_TLS=0" "$prog" 1
[ "$rc" -ne 0 ] || fail "mismatch: ranks with and without HCOMM_TLS formed a communicator"
[ "$(grep -c 'CREATE FAILED.*set the same HCOMM_TLS on every rank' "$log")" -eq 2 ] ||
  fail "mismatch: not both ranks named the HCOMM_TLS mismatch"
grep -m1 'CREATE FAILED' "$log" | sed 's/^/  /'

job no-key "-u HCOMM_JOB_KEY HCOMM_TLS=1" "" "$prog" 1
[ "$rc" -ne 0 ] || fail "no-key: HCOMM_TLS=1 ran without keys"
grep -q 'HCOMM_TLS=1 needs keys' "$log" || fail "no-key: the error does not say what to set"
grep -m1 'needs keys' "$log" | sed 's/^/  /'

echo "$name: PASS: plaintext seen without TLS, none with it (job key or certificates); a wrong" \
  "CA, a mismatch and missing keys refused with their reasons"
