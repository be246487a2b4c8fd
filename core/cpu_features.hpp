// The x86 instruction sets hcomm's kernels choose between at run time: the one place that asks
// the CPU. Header-only; each answer is computed once per process and is safe from any thread.
#pragma once

#include <cpuid.h>

namespace hcomm::core {

/// AVX2 with F16C: the reduce kernels' and the half-float codecs' fast paths. Every x86 CPU with
/// AVX2 has F16C; both are checked because virtual machines may hide either. F16C is read from
/// CPUID leaf 1 (ECX bit 29) directly: clang 14's __builtin_cpu_supports does not know "f16c".
inline bool cpu_has_avx2_f16c() {
  static const bool yes = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
    const bool f16c = (ecx & bit_F16C) != 0;
    __builtin_cpu_init();
    return f16c && __builtin_cpu_supports("avx2");
  }();
  return yes;
}

}  // namespace hcomm::core
