// Internals shared by the reduction kernels: the per-ISA kernel tables, the dispatcher's test hook, and the
// precise definition of every element-wise operation (the scalar file implements it, the SIMD files reproduce it
// bit for bit).
//
// Semantics, for every dtype and ISA:
//  - Integers: sum and prod wrap modulo 2^bits; max/min compare as signed or unsigned per the dtype.
//  - float32/float64: IEEE sum/prod in the element type. fp16/bf16: both inputs are widened to fp32 (exactly),
//    combined in fp32 and rounded back to nearest-even.
//  - Float max/min are IEEE 754-2019 maximum/minimum: if either input is NaN the result is NaN; otherwise the
//    larger/smaller value, with -0 < +0. This makes them commutative and associative, so every reduction order
//    (ring, tree, any rank order) gives the same bits.
//  - Every NaN that reduce() produces is the canonical quiet NaN: +, quiet bit only (0x7fc00000, 0x7ff8000000000000,
//    fp16 0x7e00, bf16 0x7fc0). Hardware picks NaN payloads by operand order, which compilers may commute; a
//    canonical NaN keeps the result independent of code generation and of the CPU architecture.
//  - finalizeAverage divides (IEEE division; fp16/bf16 in fp32 then RNE; integers truncate). It does not
//    canonicalize: a NaN input keeps its payload, quieted.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tern/tern.h"

namespace tern {

// Sets the kernel ISA: "scalar", "avx2" or "avx512", clamped to what the CPU supports; nullptr or "" restores the
// automatic choice (which honours TERN_REDUCE_ISA). Returns the name of the ISA now in use. Not meant to be called
// while other threads run reductions (they would see either table, both correct).
const char* setReduceIsaForTesting(const char* isa);

namespace kernels {

// The ops a kernel implements; ternAvg reduces with kSum.
enum class CombineOp { kSum, kProd, kMax, kMin };

inline CombineOp combineOpOf(ternRedOp_t op) {
  switch (op) {
    case ternProd:
      return CombineOp::kProd;
    case ternMax:
      return CombineOp::kMax;
    case ternMin:
      return CombineOp::kMin;
    default:
      return CombineOp::kSum;
  }
}

// dst[i] = a[i] op b[i]; dtype and op are valid, count > 0.
using BinaryKernel = void (*)(void* dst, const void* a, const void* b, size_t count, ternDataType_t dtype,
                              CombineOp op);
// dst[i] /= divisor (divisor >= 1). Returns false when this ISA has no kernel for dtype (the scalar one runs).
using DivideKernel = bool (*)(void* dst, size_t count, ternDataType_t dtype, int divisor);

struct KernelTable {
  const char* name;
  BinaryKernel binary;
  DivideKernel divide;
};

const KernelTable& scalarKernels();
#if defined(__x86_64__)
const KernelTable& avx2Kernels();    // needs AVX2 + F16C
const KernelTable& avx512Kernels();  // needs AVX-512 F + BW
#endif

// Canonical quiet NaN bit patterns (see above).
inline constexpr uint32_t kCanonicalNanF32 = 0x7fc00000u;
inline constexpr uint64_t kCanonicalNanF64 = 0x7ff8000000000000ull;

// Out-of-place results of at least this many bytes are written with non-temporal stores. Such an output outlives
// L2 and a core's share of L3 before anyone reads it, and streaming it saves the read-for-ownership of every dst
// line: a 64 MiB fp32 sum went from ~14 to ~20 GB/s of traffic on a Xeon (memcpy: ~13). In place (dst == a or b)
// the lines were just read, so ordinary stores are as cheap.
inline constexpr size_t kStreamingStoreBytes = size_t{4} << 20;

inline bool useStreamingStores(const void* dst, const void* a, const void* b, size_t bytes) {
  return bytes >= kStreamingStoreBytes && dst != a && dst != b;
}

}  // namespace kernels
}  // namespace tern
