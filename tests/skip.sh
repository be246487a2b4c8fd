# shellcheck shell=bash
# Sourced by every shell-driven test that needs something the machine may lack (root, network
# namespaces, nftables, tc, the soft-RoCE guest): the one way such a test skips. The caller sets
# $name (the test's name) first. The C++ unit tests do the same through tests/unit/facility.hpp.
#
#   skip WHAT HOW       WHAT is unavailable: prints
#                         SKIPPED: $name: WHAT is unavailable; to run this test: HOW
#                       and exits 77 (ctest: SKIP_RETURN_CODE 77, reported as Skipped). When the
#                       environment variable CI is set (non-empty) it prints a FAIL line and
#                       exits 1 instead: CI has root, network namespaces and the RDMA guest, so a
#                       skip there means something broke.
#   require_root WHY    skips unless this runs as root (WHY: what root is needed for)
#   require_tools T...  skips unless every command T is installed (names its Debian package)
#   without WHAT        true when HCOMM_TEST_WITHOUT (a comma-separated list, e.g. "root,nft")
#                       names WHAT: require_root and require_tools then treat it as missing, to
#                       check a test's skip (and its failure under CI) on a machine that has it.

skip() {
  local what=$1 how=${2:-}
  if [ -n "${CI:-}" ]; then
    echo "${name:-test}: FAIL: $what is unavailable${how:+ (to run this test: $how)}; CI is set," \
      "so this is a failure, not a skip" >&2
    exit 1
  fi
  echo "SKIPPED: ${name:-test}: $what is unavailable${how:+; to run this test: $how}"
  exit 77
}

without() {
  case ",${HCOMM_TEST_WITHOUT:-}," in
    *",$1,"*) return 0 ;;
  esac
  return 1
}

require_root() {
  if without root || [ "$(id -u)" -ne 0 ]; then
    skip "root" "run it as root (${1:-CI does})"
  fi
}

# The Debian package that installs command $1.
package_of() {
  case $1 in
    ip | tc) echo iproute2 ;;
    nsenter | unshare) echo util-linux ;;
    nft) echo nftables ;;
    timeout) echo coreutils ;;
    nm | readelf | c++filt) echo binutils ;;
    dpkg-deb | dpkg-shlibdeps) echo dpkg-dev ;;
    *) echo "$1" ;;
  esac
}

require_tools() {
  local tool
  for tool in "$@"; do
    if without "$tool" || ! command -v "$tool" > /dev/null; then
      skip "'$tool'" "install it (Debian package $(package_of "$tool"))"
    fi
  done
}
