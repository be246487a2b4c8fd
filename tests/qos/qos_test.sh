#!/usr/bin/env bash
# The QoS tests: tenants (separate hcomm-bench jobs, each 2 ranks: rank 0 on host A, rank 1 on
# host B) share one veth link shaped to 1 Gbit/s each way (qos_hosts.sh), each with its own class
# (--qos) and HCOMM_LINK_GBPS=1. Every rank is its own process; hcomm coordinates the tenants'
# ranks of a host through that host's shared board.
#
#   qos_shares_two        min=30 and min=70 (max 100, same priority), started together: each
#                         tenant's share of the achieved total within +-5 points of 30 / 70
#   qos_shares_three      min=20/30/50: each within +-5 points
#   qos_cap_alone         a tenant with max=40 alone on the link: 40% +-5 points of the measured
#                         link rate, not more; then one with max=100 alone: >= 90% of the link
#                         as an unpaced tenant measured it just before
#   qos_priority_latency  a bulk tenant (priority 0, min 0) saturating the link and a latency
#                         tenant (priority 7, min 10) doing 8-byte sendrecv back to back: the
#                         latency tenant's median <= 2x its median alone on the idle link, and
#                         its mean <= 3x its mean alone (below); p99 reported; the bulk tenant
#                         must get >= 0.5 Gbit/s meanwhile (it did saturate the link)
#
# How a share is measured: each tenant runs `sendrecv -b 4M -T SECONDS` (every iteration sends 4
# MiB each way), and every rank records its cumulative payload sent to the other host about every
# 100 ms (hcomm-bench -J). The tenants start together but not at the same instant (process start,
# rendezvous, warm-up: a few hundred ms apart here), so a tenant's rate is taken over the window
# in which ALL of them were in their timed runs (latest start to earliest end, at least 60% of a
# run), interpolating its byte samples at the window's ends; both directions count (each rank's
# bytes leave through its own host's shaper). A share is a tenant's rate over the sum of the
# tenants' rates in that window. The link rate is measured first, with one tenant that has no
# class and no HCOMM_LINK_GBPS (hcomm paces nothing): the payload the shaped link carries.
# Each case prints a final table "class target achieved".
#
# Why the latency case also checks the mean: back to back, the median operation is that of the
# moments the shaper's queue is empty. A queue that stands at ~2-5 ms most of the time holds up
# one operation per wait, while thousands of 12 us ones go through whenever it drains, so the
# median hardly moves even with no QoS at all (measured here: 12.2 us loaded vs 11.7 us alone,
# with a UDP probe seeing 2-5 ms of queueing at the same time). The mean (the time of all the
# operations over their number) counts the waits: 25-37 us alone; 33-39 us with the bulk tenant
# paced to 90% by hcomm (the 10% headroom the latency tenant's minimum keeps: the queue stays
# empty); 150 us with the bulk paced to 100%, 157-465 us without QoS (a standing queue). 3x
# separates the two with room for this machine's scheduling noise.
#
# Needs root, ip netns, tc (tbf), nsenter, unshare, python3; otherwise skipped (77), or failed
# under CI (tests/skip.sh). 14-16 s each.
# Usage: qos_test.sh CASE HCOMM_RUN HCOMM_BENCH
set -u
name=$1 run=$2 bench=$3
here=$(cd "$(dirname "$0")" && pwd)

fail() {
  echo "$name: FAIL: $*" >&2
  exit 1
}
# shellcheck source=qos_hosts.sh
. "$here/qos_hosts.sh"

bulk=(sendrecv -b 4M -w 2 -c 0)
begin=$(date +%s)

# shares SECONDS MIN...: one tenant per minimum, started together; checks the shares.
shares_once() {
  local secs=$1 i=0 min specs=()
  shift
  qos_measure_link
  for min in "$@"; do
    qos_tenant "min$min" $((29611 + i)) "$secs" HCOMM_LINK_GBPS=1 -- "${bulk[@]}" \
      --qos "min=$min,max=100,priority=0"
    specs+=("$dir/min$min.json=$min")
    i=$((i + 1))
  done
  qos_wait
  echo "$name: shares of the achieved total over the window all $# tenants shared:"
  analyze shares 5 "${specs[@]}"
}
# Shares paced by hcomm come out right only while the shaped link is what limits the tenants. On
# a shared 2-core VM a busy spell can hold a lone unpaced tenant to half the link for seconds
# (seen in CI: 0.50 Gbit/s measured on a 1 Gbit/s link, then 0.99 in every rerun), and the
# shares of that run are the machine's, not hcomm's: a run that misses is measured again, up to
# $tries runs in all, and the first that hits counts. A class hcomm mis-paces fails every run.
tries=3
shares() {
  local try
  for try in $(seq "$tries"); do
    shares_once "$@" && return 0
    [ "$try" -lt "$tries" ] && echo "$name: a share missed its target: measured once more"
  done
  return 1
}

# alone MAX: one tenant with max=MAX alone; sets $pct, its percentage of the measured link rate.
alone() {
  qos_tenant "max$1" 29621 5 HCOMM_LINK_GBPS=1 -- "${bulk[@]}" --qos "max=$1"
  qos_wait
  local rate
  rate=$(analyze rate "$dir/max$1.json") || fail "no rate in $dir/max$1.json"
  pct=$(python3 -c "print('%.1f' % (100 * $rate / $link_gbps))")
  echo "  max=$1 alone: $rate Gbit/s each way, $pct% of the link"
}

# latency FILE: sets $med, $p99 and $mean (us) of the tenant in FILE.
latency() {
  local figures
  figures=$(analyze latency "$1") || fail "no latency in $1"
  read -r med p99 mean <<< "$figures"
}

# latency_once: the latency tenant alone, then under a saturating bulk tenant; prints the table,
# returns 1 with $why set when a target is missed.
latency_once() {
  local lat=(sendrecv -b 8 -w 100 --qos "min=10,priority=7")
  echo "$name: 1. the latency tenant alone on the idle link"
  qos_tenant alone 29631 4 HCOMM_LINK_GBPS=1 -- "${lat[@]}"
  qos_wait
  latency "$dir/alone.json"
  local med_alone=$med p99_alone=$p99 mean_alone=$mean
  echo "  median $med_alone us, p99 $p99_alone us, mean $mean_alone us"
  echo "$name: 2. the same while a bulk tenant (priority 0, min 0) saturates the link"
  qos_tenant bulk 29632 10 HCOMM_LINK_GBPS=1 -- "${bulk[@]}" --qos "min=0,priority=0"
  # Rank 0 prints its class once joined; 1 s later the warm-up is over and TCP at full speed.
  for _ in $(seq 1 200); do
    grep -q '^\[0\] # qos:' "$dir/bulk.log" && break
    sleep 0.1
  done
  grep -q '^\[0\] # qos:' "$dir/bulk.log" || fail "the bulk tenant did not join within 20 s"
  sleep 1
  qos_tenant loaded 29633 4 HCOMM_LINK_GBPS=1 -- "${lat[@]}"
  qos_wait
  latency "$dir/loaded.json"
  local med_loaded=$med p99_loaded=$p99 mean_loaded=$mean window w0 w1 bw0 bw1 bulk_gbps
  window=$(analyze window "$dir/loaded.json") || fail "no window in $dir/loaded.json"
  read -r w0 w1 <<< "$window"
  window=$(analyze window "$dir/bulk.json") || fail "no window in $dir/bulk.json"
  read -r bw0 bw1 <<< "$window"
  bulk_gbps=$(analyze rate_in "$dir/bulk.json" "$w0" "$w1") || fail "no bulk rate"
  local ok_med ok_mean ok_bulk
  ok_med=$(python3 -c "print(int($med_loaded <= 2 * $med_alone))")
  ok_mean=$(python3 -c "print(int($mean_loaded <= 3 * $mean_alone))")
  # The bulk tenant must have been running, and sending, for the whole latency run.
  # At least half the 1 Gbit/s link; the latency tenant's minimum is only 10%.
  ok_bulk=$(python3 -c "print(int($bw0 <= $w0 and $bw1 >= $w1 and $bulk_gbps >= 0.5))")
  echo "$name: latency tenant (min=10 priority=7), 8-byte sendrecv; bulk tenant" \
    "$bulk_gbps Gbit/s each way meanwhile"
  verdict() { [ "$1" -eq 1 ] && echo PASS || echo FAIL; }
  printf '  %-22s %12s %12s %12s\n' "" "median (us)" "p99 (us)" "mean (us)"
  printf '  %-22s %12s %12s %12s\n' "alone (idle link)" "$med_alone" "$p99_alone" "$mean_alone"
  printf '  %-22s %12s %12s %12s\n' "with the bulk tenant" "$med_loaded" "$p99_loaded" \
    "$mean_loaded"
  printf '  %-22s %12s %12s %12s\n' "target: loaded/alone" "<=2x $(verdict "$ok_med")" \
    "(reported)" "<=3x $(verdict "$ok_mean")"
  why=""
  [ "$ok_bulk" -eq 1 ] || why="the bulk tenant did not saturate the link during the latency run \
($bulk_gbps Gbit/s each way, expected >= 0.5; bulk ran $bw0..$bw1, latency $w0..$w1)"
  [ "$ok_med" -eq 1 ] || why="median latency $med_loaded us under load, over 2x $med_alone us"
  [ "$ok_mean" -eq 1 ] || why="mean latency $mean_loaded us under load, over 3x $mean_alone us \
(a queue stands at the shaper: the bulk tenant is not held below the link's rate)"
  [ -z "$why" ]
}

case $name in
  qos_shares_two)
    qos_start "two$$"
    shares 10 30 70 || fail "a share is off its target (table above)"
    ;;
  qos_shares_three)
    qos_start "three$$"
    shares 10 20 30 50 || fail "a share is off its target (table above)"
    ;;
  qos_cap_alone)
    qos_start "cap$$"
    # As for the shares (above), a busy spell of the machine only ever slows a tenant: for the
    # cap (an absolute rate, 40% of HCOMM_LINK_GBPS) the link's rate is the best of its
    # measurements, and a cap that misses is measured again (the link with it), up to $tries
    # runs; the first within 40 +- 5 counts. The full share: the best of up to $tries runs
    # (below). A class hcomm over- or under-paces fails every run.
    best_link=0
    for try in $(seq "$tries"); do
      qos_measure_link
      best_link=$(python3 -c "print(max($best_link, $link_gbps))")
      link_gbps=$best_link
      alone 40
      pct40=$pct
      ok40=$(python3 -c "print(int(abs($pct40 - 40) <= 5))")
      [ "$ok40" -eq 1 ] && break
      [ "$try" -lt "$tries" ] && echo "  max=40 alone: off its target, measured once more"
    done
    # The full share is a fraction of what the link carried just before it, unpaced, in the
    # same spell of the machine: a busy spell (seen in CI: three runs at 83, 72 and 60% of a link
    # measured at 0.99 Gbit/s earlier) slows both alike, a class hcomm throttles only the one.
    pct100=0
    for try in $(seq "$tries"); do
      qos_measure_link
      alone 100
      pct100=$(python3 -c "print(max($pct100, $pct))")
      ok100=$(python3 -c "print(int($pct100 >= 90))")
      [ "$ok100" -eq 1 ] && break
      [ "$try" -lt "$tries" ] && echo "  max=100 alone: under 90%, measured once more"
    done
    link_gbps=$best_link
    echo "$name: alone on the link (the cap: percent of the best link measurement," \
      "$link_gbps Gbit/s; the full share: of the link measured just before it):"
    printf '  %-28s %8s %9s  %s\n' class target achieved verdict
    printf '  %-28s %8s %8s%%  %s\n' "min=0 max=40 priority=0" "40+-5%" "$pct40" \
      "$([ "$ok40" -eq 1 ] && echo PASS || echo FAIL)"
    printf '  %-28s %8s %8s%%  %s\n' "min=0 max=100 priority=0" ">=90%" "$pct100" \
      "$([ "$ok100" -eq 1 ] && echo PASS || echo FAIL)"
    [ "$ok40" -eq 1 ] || fail "max=40 alone got $pct40% of the link, not 40 +- 5"
    [ "$ok100" -eq 1 ] || fail "max=100 alone got $pct100% of the link, under 90"
    ;;
  qos_priority_latency)
    qos_start "lat$$"
    # A busy spell of the machine slows the latency tenant's ranks (they share the 2 cores with
    # the bulk tenant's): a run that misses is measured again, alone and loaded, up to $tries
    # runs; the first that meets every target counts. A class hcomm mis-schedules misses every
    # run.
    for try in $(seq "$tries"); do
      latency_once && exit 0
      [ "$try" -lt "$tries" ] && echo "$name: a target missed: measured once more"
    done
    fail "$why"
    ;;
  *)
    fail "unknown case '$name'"
    ;;
esac
echo "$name: ok ($(($(date +%s) - begin)) s)"
