#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages only) and builds hcomm into build/.
# Idempotent: packages already present are not touched; an up-to-date build does nothing.
# Environment: BUILD_DIR (default build), HCOMM_WERROR=ON|OFF (default ON under CI).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++ cmake make pkg-config procps clang-format libcaf-dev libboost-dev libzstd-dev doctest-dev
          libibverbs-dev librdmacm-dev libhwloc-dev libssl-dev openssl clang libclang-rt-14-dev python3 iproute2 nftables util-linux dpkg-dev debootstrap
          python3-dev pybind11-dev python3-pybind11 python3-numpy python3-pytest python3-venv
          python3-torch libtorch-dev chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

build_dir=${BUILD_DIR:-build}
werror=${HCOMM_WERROR:-$([ -n "${CI:-}" ] && echo ON || echo OFF)}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DHCOMM_WERROR="$werror" >/dev/null
cmake --build "$build_dir" -j2
