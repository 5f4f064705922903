// Run-time choice of the CPU instruction set used by the codec kernels. The library is compiled without -march
// flags; AVX2 and AVX-512 kernels are separate functions built with __attribute__((target)) and picked here from
// __builtin_cpu_supports. Every path computes the same bits (codec_math.hpp), so the choice only changes speed.
#pragma once

namespace tern::compress {

enum class CodecIsa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

// The best instruction set this CPU supports.
CodecIsa bestCodecIsa();

// Whether this CPU can run kernels of `isa`.
bool codecIsaSupported(CodecIsa isa);

// The instruction set the kernels use now: bestCodecIsa() unless overridden by setCodecIsa.
CodecIsa activeCodecIsa();

// Internal hook for tests and benchmarks: forces kernels of `isa` (process-wide). Throws
// tern::Error(ternInvalidArgument) if this CPU cannot run them.
void setCodecIsa(CodecIsa isa);

// "scalar", "avx2" or "avx512".
const char* codecIsaName(CodecIsa isa);

// Forces an instruction set for the lifetime of the object, then restores the previous one (tests).
class ScopedCodecIsa {
 public:
  explicit ScopedCodecIsa(CodecIsa isa) : previous_(activeCodecIsa()) { setCodecIsa(isa); }
  ~ScopedCodecIsa() { setCodecIsa(previous_); }
  ScopedCodecIsa(const ScopedCodecIsa&) = delete;
  ScopedCodecIsa& operator=(const ScopedCodecIsa&) = delete;

 private:
  CodecIsa previous_;
};

}  // namespace tern::compress
