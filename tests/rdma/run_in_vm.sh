#!/usr/bin/env bash
# run_in_vm.sh - run a program in a throw-away QEMU guest that has two REAL soft-RoCE devices
# (rdma_rxe, RoCEv2) joined by a virtual wire, and exit with that program's exit code.
#
# Why a VM: the kernels of our development and CI machines have no RDMA (CONFIG_INFINIBAND unset:
# ibv_get_device_list fails with ENOSYS), so rdma_rxe cannot be loaded there. Debian 12's own kernel
# ships rdma_rxe.ko: this script fetches that kernel's .deb from Debian's archive (unpacked into the
# work dir, never installed), builds an initramfs (busybox-static, kmod, iproute2, nftables,
# rdma-core userspace, the program and the libraries ldd lists) and boots it in QEMU. Programs built
# on the host run there unmodified, as root. QEMU emulates the CPU (TCG): the /dev/kvm of these
# hosts (PVM) cannot boot a stock kernel; KVM is used only where the CPU shows vmx/svm
# (HCOMM_RDMA_VM_ACCEL=tcg|kvm overrides). The guest has no NIC and reaches no network.
#
# Topology ("wire"), both ends in the guest's root network namespace:
#     rxe0 - veth0 198.18.0.1/24  <==== veth pair ====>  veth1 198.18.0.2/24 - rxe1
# Policy routing makes traffic between the two (local) addresses really cross the pair instead of
# "lo": the local table is consulted after per-destination tables, except for packets arriving on
# veth0/veth1; static neighbours, accept_local=1, rp_filter=0. So nft input rules, tc netem and
# "ip link set veth1 down" act on RoCE traffic as between two hosts. (An end in another netns
# carries no RoCE on 6.1: rdma_rxe has UDP/4791 sockets in the initial namespace only.)
#
# Usage: run_in_vm.sh [options] [--] PROGRAM [ARGS...]
#        run_in_vm.sh [options] -c 'SCRIPT'           (run by /bin/sh = dash)
#   PROGRAM with a "/" is copied into the guest (same absolute path, with its libraries); a bare
#   name is looked up in the guest: busybox applets, dash, bash, timeout, env, modprobe, ip, tc,
#   rdma, nft, ibv_devices, ibv_devinfo, ibv_rc_pingpong, rping.
# Options:
#   --copy PATH   also copy PATH (file or directory) to the same absolute path; ELF files come
#                 with the libraries ldd lists. Repeatable.
#   --env N=V     export N=V to the guest command. Repeatable.
#   --timeout S   wall-clock limit of the VM (default 300); the command itself gets S-30.
#   --mem MB      guest RAM (default 1024; copied files live in it).
#   --work DIR    cache (kernel, initramfs) and logs; default $HCOMM_RDMA_VM_DIR, else
#                 /tmp/hcomm-rdma-vm.
# The guest command runs with stdin /dev/null, in the host's current directory if that exists in
# the guest (e.g. copied in), else in /root, with these variables:
#   RXE_DEV_A=rxe0 RXE_IF_A=veth0 RXE_IP_A=198.18.0.1 RXE_GID_A=<index of rxe0's IPv4 RoCEv2 GID>
#   RXE_DEV_B=rxe1 RXE_IF_B=veth1 RXE_IP_B=198.18.0.2 RXE_GID_B=<same for rxe1>
# Output: the guest console on stdout (kept in WORK/last-run.log). Exit code: the command's;
#   124 timeout, 125 the guest died or its setup failed (panic, module, rxe), 126 host setup error
#   (not root while packages are missing, apt-get or the archive failed, QEMU cannot start, ...).
# Host: Debian 12 amd64. Missing packages are installed with apt-get (needs root; nothing is fetched
# from anywhere but the configured apt archive). Measured on a 2-core host: first run ~25 s
# (18.6 MB of packages, the kernel .deb, the initramfs), later runs ~9 s (guest ready in ~4 s).
# rdma_rxe caveat: an RC QP with retry_cnt 7 retries forever there (no IBV_WC_RETRY_EXC_ERR ever);
# use <= 6 (retry_cnt 6, timeout 14: the error ~0.5 s after the path died).
set -euo pipefail

work=${HCOMM_RDMA_VM_DIR:-/tmp/hcomm-rdma-vm} timeout=300 mem=1024 script="" copies=() envs=()
ip_a=198.18.0.1 ip_b=198.18.0.2   # RFC 2544 benchmarking range, exists only inside the guest
packages=(qemu-system-x86 busybox-static kmod iproute2 nftables cpio ibverbs-providers
          ibverbs-utils rdmacm-utils libibverbs-dev librdmacm-dev)
modules=(rdma_rxe ib_uverbs rdma_ucm veth sch_netem nf_tables nft_ct nft_reject_inet
         crc32_generic crc32-pclmul)   # rdma_rxe's crc32 comes from a crypto module
lib=/usr/lib/x86_64-linux-gnu
# Host programs in the guest image. /bin/sh is dash, not busybox: Debian's busybox-static runs its
# own applets ahead of $PATH, so `ip` in a busybox shell would not be iproute2.
# (Plus the rxe provider of libibverbs and libgcc_s.so.1, which glibc's pthread_exit dlopen()s,
# so ldd never lists it.)
programs=(sh bash timeout env modprobe ip tc rdma nft ibv_devices ibv_devinfo ibv_rc_pingpong rping)

log() { printf '[run_in_vm %(%T)T] %s\n' -1 "$*" >&2; }
die() { log "ERROR: $*"; exit 126; }
since() { awk -v s="$1" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - s }'; }

while [ $# -gt 0 ]; do
  case $1 in
    -c|--copy|--env|--timeout|--mem|--work) [ $# -ge 2 ] || die "$1 needs a value" ;;&
    -c) script=$2 ;;
    --copy) copies+=("$2") ;;
    --env) [[ $2 =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "--env wants NAME=VALUE"; envs+=("$2") ;;
    --timeout) [[ $2 =~ ^[0-9]+$ && $2 -ge 60 ]] || die "--timeout wants seconds >= 60"; timeout=$2 ;;
    --mem) [[ $2 =~ ^[0-9]+$ ]] || die "--mem wants MiB"; mem=$2 ;;
    --work) work=$2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) break ;;
  esac
  shift 2
done
command=("$@")
[[ -n $script || ${#command[@]} -gt 0 ]] || die "nothing to run (see --help)"
[[ -z $script || ${#command[@]} -eq 0 ]] || die "give either -c SCRIPT or PROGRAM, not both"
started=$(date +%s.%N)

# ---- host packages (idempotent) and the kernel package's name --------------------------------
apt_get() { DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=300 "$@"; }
apt_update() {
  [ "$(id -u)" = 0 ] || die "apt-get update needs root"
  log "apt-get update"
  apt_get update > "$work/apt-update.log" 2>&1 ||
    log "apt-get update reported errors (see $work/apt-update.log); going on"
}
mkdir -p "$work" || die "cannot create $work"
[ -O "$work" ] || die "$work belongs to another user"
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get > /dev/null || die "missing packages ${missing[*]} and no apt-get"
  [ "$(id -u)" = 0 ] || die "missing packages ${missing[*]}: run as root to install them"
  apt_update
  log "apt-get install ${missing[*]}"
  apt_get install -y --no-install-recommends "${missing[@]}" > "$work/apt.log" 2>&1 ||
    { tail -20 "$work/apt.log" >&2; die "apt-get install failed"; }
fi
kernel_package() {
  apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)/\1/p' | head -1
}
kpkg=$(kernel_package)
[ -n "$kpkg" ] || { apt_update; kpkg=$(kernel_package); }
[ -n "$kpkg" ] || die "apt-cache does not know linux-image-amd64"
kver=${kpkg#linux-image-}

# ---- cache: the guest kernel and the base initramfs (one preparer at a time) -----------------
run=$(mktemp -d "$work/run.XXXXXX")
trap 'rm -rf "$run"' EXIT
exec 9> "$work/lock"
flock -w 900 9 || die "$work/lock is held by another run for 15 minutes"
find "$work" -maxdepth 1 -name 'run.*' -mmin +60 -exec rm -rf {} +   # left by killed runs

kdir=$work/kernel-$kver   # vmlinuz and the modules we need, with their dependencies
if [ ! -f "$kdir/.done" ]; then
  tmp=$work/unpack; rm -rf "$tmp" "$kdir"; mkdir -p "$tmp/root"
  log "apt-get download $kpkg"
  if ! (cd "$tmp" && apt-get -q download "$kpkg") > "$tmp/log" 2>&1; then
    apt_update   # the lists may name a version the archive no longer has
    kpkg=$(kernel_package); kver=${kpkg#linux-image-}; kdir=$work/kernel-$kver
    (cd "$tmp" && apt-get -q download "$kpkg") > "$tmp/log" 2>&1 ||
      { cat "$tmp/log" >&2; die "cannot download $kpkg"; }
  fi
  dpkg-deb -x "$tmp"/linux-image-*.deb "$tmp/root" || die "cannot unpack $kpkg"
  depmod -b "$tmp/root" "$kver" || die "depmod of $kpkg failed"
  install -D -m 644 "$tmp/root/boot/vmlinuz-$kver" "$kdir/vmlinuz"
  for m in "${modules[@]}"; do
    modprobe -d "$tmp/root" -S "$kver" --show-depends "$m" || die "$kpkg has no module $m"
  done | awk '$1 == "insmod" { print $2 }' | sort -u | while read -r f; do
    install -D -m 644 "$f" "$kdir/${f#"$tmp/root/"}"
  done
  cp "$tmp/root/lib/modules/$kver"/modules.{builtin,builtin.modinfo,order} "$kdir/lib/modules/$kver/"
  rm -rf "$tmp"; touch "$kdir/.done"
fi

# put ROOT PATH: copy PATH into the tree ROOT at its canonical place (symlinks dereferenced), a
# directory with all its content; ELF files with the libraries ldd lists. Paths already in $have
# (the base image, when building the payload) are skipped.
have=""
put() {
  local root=$1 p f
  [ -e "$2" ] || die "$2: no such file or directory"
  if [ -d "$2" ]; then p=$(realpath -e -- "$2"); else p=$(realpath -e -- "$(dirname -- "$2")")/${2##*/}; fi
  [[ -n $have && -e $have$p ]] && return 0
  if [ -d "$p" ]; then
    mkdir -p "$root$p"; cp -a "$p/." "$root$p/"
    find "$p" -type f -perm -u+x | while read -r f; do elf_deps "$root" "$f"; done
  elif [ ! -e "$root$p" ]; then
    mkdir -p "$root$(dirname "$p")"; cp -L "$p" "$root$p"
    elf_deps "$root" "$p"
  fi
}
elf_deps() {
  [ "$(head -c4 "$2" 2>/dev/null | tr -d '\0')" = $'\x7fELF' ] || return 0
  local l
  for l in $(ldd "$2" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
    put "$1" "$l"
  done
}
cpio_of() { (cd "$1" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet); }

# The base image: rebuilt when this script, the kernel or a host package changes.
key=$({ cat "$0"; echo "$kver"; dpkg-query -W "${packages[@]}"; } | sha256sum | cut -c1-16)
base=$work/base-$key
if [ ! -f "$base.cpio" ]; then
  log "building the base initramfs for $kver"
  rm -rf "$work"/base-*
  R=$base
  mkdir -p "$R"/{usr/bin,usr/sbin,usr/lib64,etc/libibverbs.d,proc,sys,dev,run,root,tmp}
  for d in bin sbin lib lib64; do ln -s "usr/$d" "$R/$d"; done
  chmod 1777 "$R/tmp"
  for p in "${programs[@]}" "$lib"/libibverbs/librxe-rdmav*.so "$lib"/libgcc_s.so.1; do
    [[ $p == /* ]] || p=$(PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v "$p") || die "no program $p"
    put "$R" "$p"
  done
  [ -d /usr/lib/tc ] && put "$R" /usr/lib/tc   # netem delay distributions
  cp /etc/libibverbs.d/rxe.driver "$R/etc/libibverbs.d/"   # rxe only: no probing of other drivers
  cp /usr/bin/busybox "$R/usr/bin/busybox"
  for a in $(/usr/bin/busybox --list-full); do   # everything else, without shadowing the above
    [ -e "$R/$a" ] || [ -L "$R/$a" ] || ln -s /usr/bin/busybox "$R/$a"
  done
  cp -a "$kdir/lib" "$R/usr/"
  depmod -b "$R" "$kver"
  printf 'root:x:0:0:root:/root:/bin/sh\n' > "$R/etc/passwd"
  printf 'root:x:0:\n' > "$R/etc/group"
  printf '127.0.0.1 localhost\n' > "$R/etc/hosts"
  printf '%s\n' "$lib" /usr/local/lib > "$R/etc/ld.so.conf"
  ldconfig -r "$R"
  cat > "$R/init" <<'INIT'
#!/bin/sh
# PID 1 of the guest: pseudo file systems, modules, the wire (veth pair, routing, rxe devices),
# then /payload/cmd under a watchdog; prints "HCOMM_VM_EXIT=<code>" and powers off.
export PATH=/usr/sbin:/usr/bin HOME=/root TERM=dumb
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm; mount -t devpts devpts /dev/pts; mount -t tmpfs shm /dev/shm
mount -t tmpfs run /run
. /payload/config
finish() { echo "HCOMM_VM_EXIT=$1"; poweroff -f; }
( sleep "$CMD_TIMEOUT"; echo "run_in_vm: guest command timed out after ${CMD_TIMEOUT}s"; finish 124 ) &
gid_index() {   # the GID holding ::ffff:<IPv4> with type RoCE v2, or nothing
  for g in /sys/class/infiniband/$1/ports/1/gids/*; do
    case $(cat "$g") in 0000:0000:0000:0000:0000:ffff:*)
      [ "$(cat "/sys/class/infiniband/$1/ports/1/gid_attrs/types/${g##*/}" 2>/dev/null)" = "RoCE v2" ] &&
        echo "${g##*/}" && return ;;
    esac
  done 2> /dev/null
}
(
  set -ex
  for m in rdma_rxe ib_uverbs rdma_ucm veth; do modprobe $m; done
  ip link set lo up
  ip link add veth0 type veth peer name veth1
  ip addr add "$RXE_IP_A/24" dev veth0; ip link set veth0 up
  ip addr add "$RXE_IP_B/24" dev veth1; ip link set veth1 up
  for k in all default veth0 veth1; do
    echo 1 > /proc/sys/net/ipv4/conf/$k/accept_local; echo 0 > /proc/sys/net/ipv4/conf/$k/rp_filter
  done
  ip rule add pref 100 lookup local; ip rule del pref 0 lookup local
  ip rule add pref 10 iif veth0 lookup local; ip rule add pref 11 iif veth1 lookup local
  ip route add "$RXE_IP_B" dev veth0 src "$RXE_IP_A" table 101; ip rule add pref 20 to "$RXE_IP_B" lookup 101
  ip route add "$RXE_IP_A" dev veth1 src "$RXE_IP_B" table 102; ip rule add pref 21 to "$RXE_IP_A" lookup 102
  ip neigh replace "$RXE_IP_B" lladdr "$(cat /sys/class/net/veth1/address)" dev veth0 nud permanent
  ip neigh replace "$RXE_IP_A" lladdr "$(cat /sys/class/net/veth0/address)" dev veth1 nud permanent
  rdma link add rxe0 type rxe netdev veth0
  rdma link add rxe1 type rxe netdev veth1
) > /tmp/setup.log 2>&1 || { cat /tmp/setup.log; dmesg | tail -20; echo "run_in_vm: guest setup failed"; finish 125; }
for i in $(seq 50); do   # the GID tables fill in asynchronously
  RXE_GID_A=$(gid_index rxe0); RXE_GID_B=$(gid_index rxe1)
  [ -n "$RXE_GID_A" ] && [ -n "$RXE_GID_B" ] && break
  sleep 0.1
done
[ -n "$RXE_GID_A" ] && [ -n "$RXE_GID_B" ] || { echo "run_in_vm: no IPv4 RoCEv2 GID"; finish 125; }
export RXE_DEV_A=rxe0 RXE_IF_A=veth0 RXE_IP_A RXE_GID_A RXE_DEV_B=rxe1 RXE_IF_B=veth1 RXE_IP_B RXE_GID_B
echo "run_in_vm: guest ready at $(cut -d' ' -f1 /proc/uptime)s, kernel $(uname -r), $(nproc) cpus:" \
     "rxe0/veth0/$RXE_IP_A gid $RXE_GID_A, rxe1/veth1/$RXE_IP_B gid $RXE_GID_B"
cd /root
sh /payload/cmd < /dev/null
rc=$?
echo "run_in_vm: command exit code $rc at $(cut -d' ' -f1 /proc/uptime)s"
finish $rc
INIT
  chmod 755 "$R/init"
  cpio_of "$R" > "$base.tmp" && mv "$base.tmp" "$base.cpio"
  log "base initramfs: $(du -m "$base.cpio" | cut -f1) MiB"
fi
cp "$kdir/vmlinuz" "$run/vmlinuz"; cp "$base.cpio" "$run/initrd"   # safe from a later rebuild
exec 9>&-

# ---- this run's payload: the command, its copies and config, appended to the base archive -----
P=$run/root; mkdir -p "$P/payload"; have=$base
quote() { local a; for a in "$@"; do printf "'%s' " "${a//\'/\'\\\'\'}"; done; }
for c in "${copies[@]}"; do put "$P" "$c"; done
if [ ${#command[@]} -gt 0 ] && [[ ${command[0]} == */* ]]; then
  [ -e "${command[0]}" ] || die "${command[0]}: no such file"
  command[0]=$(realpath -e -- "$(dirname -- "${command[0]}")")/${command[0]##*/}
  put "$P" "${command[0]}"
fi
{
  for e in "${envs[@]}"; do printf 'export %s=%s\n' "${e%%=*}" "$(quote "${e#*=}")"; done
  printf 'cd %s 2> /dev/null\n' "$(quote "$PWD")"
  if [ -n "$script" ]; then printf '%s\n' "$script"; else printf 'exec %s\n' "$(quote "${command[@]}")"; fi
} > "$P/payload/cmd"
printf 'CMD_TIMEOUT=%s\nRXE_IP_A=%s\nRXE_IP_B=%s\n' $((timeout - 30)) "$ip_a" "$ip_b" > "$P/payload/config"
cpio_of "$P" >> "$run/initrd"

# ---- boot ------------------------------------------------------------------------------------
accel=${HCOMM_RDMA_VM_ACCEL:-}
if [ -z "$accel" ]; then
  accel=tcg
  [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo && accel=kvm
fi
if [ "$accel" = kvm ]; then cpu=(-accel kvm -cpu host); else cpu=(-accel tcg,thread=multi -cpu max); fi
log "booting $kver ($accel, 2 vCPUs, $mem MiB, timeout ${timeout}s) after $(since "$started")s of preparation"
booted=$(date +%s.%N)
set +e
timeout -k 10 "$timeout" qemu-system-x86_64 "${cpu[@]}" -smp 2 -m "$mem" -nodefaults -no-user-config \
  -display none -monitor none -serial stdio -nic none -no-reboot \
  -kernel "$run/vmlinuz" -initrd "$run/initrd" \
  -append "console=ttyS0 loglevel=4 panic=-1 rdinit=/init mitigations=off" < /dev/null 2>&1 |
  sed -u 's/\r$//' | tee "$run/console.log"
qemu_rc=${PIPESTATUS[0]}
set -e
cp "$run/console.log" "$work/last-run.log"

rc=$(sed -n 's/^HCOMM_VM_EXIT=\([0-9]\{1,3\}\)$/\1/p' "$run/console.log" | tail -1)
if [ -z "$rc" ]; then
  case $qemu_rc in
    0) rc=125; log "the guest ended without reporting an exit code (panic? see above)" ;;
    124|137) rc=124; log "timeout: the VM ran for ${timeout}s" ;;
    *) rc=126; log "qemu-system-x86_64 failed (exit code $qemu_rc)" ;;
  esac
fi
log "exit code $rc; VM $(since "$booted")s, total $(since "$started")s"
exit "$rc"
