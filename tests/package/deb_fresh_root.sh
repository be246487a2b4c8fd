#!/usr/bin/env bash
# The Debian package on a clean Debian 12: debootstrap a minimal bookworm root, `apt-get install
# ./hcomm_<version>_amd64.deb` in it (apt brings the runtime packages the .deb depends on), and
# run `hcomm-run -n 2 hcomm-bench allreduce -b 8 -e 1M -c 1` from its PATH. Needs root, debootstrap
# and Debian's archive (a few minutes). Usage: deb_fresh_root.sh HCOMM_DEB
set -euo pipefail
deb=$(realpath "${1:?usage: deb_fresh_root.sh HCOMM_DEB}")
name=package_deb_fresh_root
source "$(dirname "$0")/../skip.sh"
require_root "debootstrap and chroot"
require_tools debootstrap chroot
mirror=${HCOMM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
root=$(mktemp -d /tmp/hcomm-freshroot.XXXXXX)
cleanup() {
  for m in dev/shm dev/pts dev proc; do
    if mountpoint -q "$root/$m"; then umount "$root/$m"; fi
  done
  rm -rf "$root"
}
trap cleanup EXIT
step() { echo "deb_fresh_root: $*"; }

step "debootstrap --variant=minbase bookworm $root ($mirror)"
debootstrap --variant=minbase bookworm "$root" "$mirror" > "$root.log" 2>&1 ||
  { tail -20 "$root.log"; echo "deb_fresh_root: FAIL: debootstrap"; exit 1; }
rm -f "$root.log"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
cp "$deb" "$root/tmp/"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
step "before: $(in_root sh -c 'command -v hcomm-run || echo no hcomm-run on PATH')"
step "apt-get install ./$(basename "$deb")"
in_root apt-get update -qq
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  "./tmp/$(basename "$deb")" | grep -E '^(Setting up|Unpacking)' || true
step "installed: $(in_root dpkg-query -W -f '${Package} ${Version}; depends: ${Depends}' hcomm)"
step "hcomm-run -n 2 hcomm-bench allreduce -b 8 -e 1M -c 1 (from PATH: $(in_root sh -c 'command -v hcomm-run'))"
out=$(in_root hcomm-run -n 2 hcomm-bench allreduce -b 8 -e 1M -c 1 2>&1) ||
  { echo "$out"; echo "deb_fresh_root: FAIL: hcomm-bench in the fresh root"; exit 1; }
echo "$out" | sed 's/^/  /'
grep -q 'Out of bounds values : 0 OK' <<<"$out" ||
  { echo "deb_fresh_root: FAIL: hcomm-bench did not report its check"; exit 1; }
step "PASS: the .deb installs on a fresh Debian 12 root and hcomm-bench runs from PATH, checked"
