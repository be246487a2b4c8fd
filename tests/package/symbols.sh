#!/usr/bin/env bash
# libhcomm.so exports hcomm's public symbols only: the C API (hcomm_*) and namespace hcomm (with
# its classes' typeinfo and vtables) — no CAF (but in the parameters of the actor API's
# functions, hcomm::actor::), no standard-library instantiation, no internal layer — and carries
# its SONAME. Usage: symbols.sh LIBHCOMM_SO
set -euo pipefail
lib=${1:?usage: symbols.sh LIBHCOMM_SO}
name=package_symbols
source "$(dirname "$0")/../skip.sh"
require_tools nm c++filt readelf
fail=0
exported=$(nm -D --defined-only "$lib" | awk '{ $1 = ""; $2 = ""; sub(/^  */, ""); print }' | c++filt)
count=$(wc -l <<<"$exported")
foreign=$(grep -vE '^(hcomm::|hcomm_|typeinfo for hcomm::|typeinfo name for hcomm::|vtable for hcomm::|VTT for hcomm::)' <<<"$exported" || true)
if [ -n "$foreign" ]; then
  echo "symbols: FAIL: libhcomm.so exports symbols outside hcomm:"
  sed 's/^/  /' <<<"$foreign" | head -40
  fail=1
fi
# A symbol of a layer's namespace (its parameters may name internal types: a private member's).
layers=$(grep -E '^[a-z]' "$(dirname "$0")/../../layers.txt" | paste -sd'|')
internal=$(grep -E "^((typeinfo|typeinfo name|vtable|VTT) for )?hcomm::($layers)::" <<<"$exported" || true)
caf=$(grep 'caf::' <<<"$exported" | grep -vE '^hcomm::actor::[a-z_]+(\[abi:cxx11\])?\(' || true)
if [ -n "$internal" ] || [ -n "$caf" ]; then
  echo "symbols: FAIL: libhcomm.so exports internals:"
  { echo "$caf"; echo "$internal"; } | grep . | head -10 | sed 's/^/  /'
  fail=1
fi
for expected in '^hcomm_allreduce$' '^hcomm_reg_mem$' '^hcomm_set_qos$' '^hcomm_version$' \
                '^hcomm::Communicator::create\(hcomm::Config const&\)$' '^hcomm::version\(\)$' \
                '^hcomm::register_protocol\(' '^hcomm::Work::wait\(' \
                '^hcomm::actor::spawn_communicator(\[abi:cxx11\])?\(caf::actor_system&, hcomm::Config const&\)$'; do
  if ! grep -qE "$expected" <<<"$exported"; then
    echo "symbols: FAIL: libhcomm.so does not export $expected"
    fail=1
  fi
done
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
if [ "$soname" != "libhcomm.so.0" ]; then
  echo "symbols: FAIL: SONAME is '$soname', expected libhcomm.so.0"
  fail=1
fi
((fail == 0)) && echo "symbols: $count symbols exported, all hcomm's; SONAME $soname"
exit $fail
