// Run-time x86 feature tests that compile with both GCC and clang (the build uses GCC; clang-tidy parses with clang).
#pragma once

#if (defined(__x86_64__) || defined(__i386__)) && defined(__clang__)
#include <cpuid.h>
#endif

namespace tern {

// F16C (fp16 <-> fp32 conversions). Callers test AVX2 first, which already covers the OS enabling the YMM state.
// GCC's __builtin_cpu_supports knows "f16c"; clang 14's does not, so clang builds read CPUID.1:ECX.F16C directly.
inline bool cpuHasF16c() {
#if defined(__x86_64__) || defined(__i386__)
#if defined(__clang__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
#else
  return __builtin_cpu_supports("f16c");
#endif
#else
  return false;
#endif
}

}  // namespace tern
