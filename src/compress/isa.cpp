#include "compress/isa.hpp"

#include <atomic>

#include "base/cpu_features.hpp"
#include "base/error.hpp"

namespace tern::compress {
namespace {

// AVX2 kernels also use F16C (fp16 loads/stores); AVX-512 kernels use F, BW, VL and DQ (Skylake-SP and later).
bool cpuHasAvx2() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx2") && cpuHasF16c();
#else
  return false;
#endif
}

bool cpuHasAvx512() {
#if defined(__x86_64__) || defined(__i386__)
  return cpuHasAvx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#else
  return false;
#endif
}

// -1: not forced.
std::atomic<int> forcedIsa{-1};

}  // namespace

CodecIsa bestCodecIsa() {
  static const CodecIsa best = cpuHasAvx512() ? CodecIsa::kAvx512 : cpuHasAvx2() ? CodecIsa::kAvx2 : CodecIsa::kScalar;
  return best;
}

bool codecIsaSupported(CodecIsa isa) {
  switch (isa) {
    case CodecIsa::kScalar:
      return true;
    case CodecIsa::kAvx2:
      return cpuHasAvx2();
    case CodecIsa::kAvx512:
      return cpuHasAvx512();
  }
  return false;
}

CodecIsa activeCodecIsa() {
  int forced = forcedIsa.load(std::memory_order_relaxed);
  return forced < 0 ? bestCodecIsa() : static_cast<CodecIsa>(forced);
}

void setCodecIsa(CodecIsa isa) {
  if (!codecIsaSupported(isa)) {
    throwError(ternInvalidArgument, "codec ISA %s is not supported by this CPU", codecIsaName(isa));
  }
  forcedIsa.store(static_cast<int>(isa), std::memory_order_relaxed);
}

const char* codecIsaName(CodecIsa isa) {
  switch (isa) {
    case CodecIsa::kScalar:
      return "scalar";
    case CodecIsa::kAvx2:
      return "avx2";
    case CodecIsa::kAvx512:
      return "avx512";
  }
  return "invalid";
}

}  // namespace tern::compress
