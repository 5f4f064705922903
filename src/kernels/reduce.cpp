// Entry points of the reduction kernels and the run-time ISA dispatch: the best kernel table the CPU (and OS)
// supports is chosen on first use, optionally lowered by TERN_REDUCE_ISA=scalar|avx2|avx512.
#include "kernels/reduce.hpp"

#include <atomic>
#include <cstdio>
#include <cstring>

#include "base/cpu_features.hpp"
#include "base/dtype.hpp"
#include "base/env.hpp"
#include "base/error.hpp"
#include "kernels/reduce_dispatch.hpp"

namespace tern {
namespace {

using kernels::KernelTable;

enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

Isa bestSupportedIsa() {
#if defined(__x86_64__)
  // libgcc's checks include the OS enabling the register state (XCR0), not only the CPUID bits.
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && cpuHasF16c();
  if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) return Isa::kAvx512;
  if (avx2) return Isa::kAvx2;
#endif
  return Isa::kScalar;
}

// Returns false (and leaves *isa alone) for names it does not know.
bool parseIsa(const char* name, Isa* isa) {
  if (std::strcmp(name, "scalar") == 0) {
    *isa = Isa::kScalar;
  } else if (std::strcmp(name, "avx2") == 0) {
    *isa = Isa::kAvx2;
  } else if (std::strcmp(name, "avx512") == 0) {
    *isa = Isa::kAvx512;
  } else {
    return false;
  }
  return true;
}

const KernelTable& tableFor(Isa isa) {
  switch (isa) {
#if defined(__x86_64__)
    case Isa::kAvx512:
      return kernels::avx512Kernels();
    case Isa::kAvx2:
      return kernels::avx2Kernels();
#endif
    default:
      return kernels::scalarKernels();
  }
}

// The requested ISA (nullptr or "": the best one, or TERN_REDUCE_ISA's), never above what the CPU supports.
const KernelTable& resolveTable(const char* requested) {
  const Isa best = bestSupportedIsa();
  Isa isa = best;
  if (requested == nullptr || *requested == '\0') {
    const std::optional<std::string> env = envString("REDUCE_ISA");
    static std::atomic<bool> warned{false};
    if (env && !parseIsa(env->c_str(), &isa) && !warned.exchange(true)) {
      std::fprintf(stderr, "tern: ignoring TERN_REDUCE_ISA=%s (expected scalar, avx2 or avx512)\n", env->c_str());
    }
  } else {
    parseIsa(requested, &isa);
  }
  return tableFor(isa < best ? isa : best);
}

// Resolved on first use. Concurrent first calls may both resolve, to the same table, so a relaxed race is benign;
// acquire/release only orders the (constant) table contents.
std::atomic<const KernelTable*> gTable{nullptr};

const KernelTable& activeTable() {
  const KernelTable* table = gTable.load(std::memory_order_acquire);
  if (table == nullptr) {
    table = &resolveTable(nullptr);
    gTable.store(table, std::memory_order_release);
  }
  return *table;
}

void checkDataType(ternDataType_t dtype, const char* where) {
  if (!validDataType(dtype)) throwError(ternInvalidArgument, "%s: invalid datatype %d", where, static_cast<int>(dtype));
}

}  // namespace

void reduce(void* dst, const void* a, const void* b, size_t count, ternDataType_t dtype, ternRedOp_t op) {
  checkDataType(dtype, "reduce");
  if (!validRedOp(op)) throwError(ternInvalidArgument, "reduce: invalid reduction op %d", static_cast<int>(op));
  if (count == 0) return;
  activeTable().binary(dst, a, b, count, dtype, kernels::combineOpOf(op));
}

void reduceScalar(void* dst, const void* a, const void* b, size_t count, ternDataType_t dtype, ternRedOp_t op) {
  checkDataType(dtype, "reduceScalar");
  if (!validRedOp(op)) throwError(ternInvalidArgument, "reduceScalar: invalid reduction op %d", static_cast<int>(op));
  if (count == 0) return;
  kernels::scalarKernels().binary(dst, a, b, count, dtype, kernels::combineOpOf(op));
}

void finalizeAverage(void* dst, size_t count, ternDataType_t dtype, int divisor) {
  checkDataType(dtype, "finalizeAverage");
  if (divisor < 1) throwError(ternInvalidArgument, "finalizeAverage: divisor %d must be positive", divisor);
  if (count == 0) return;
  if (!activeTable().divide(dst, count, dtype, divisor)) kernels::scalarKernels().divide(dst, count, dtype, divisor);
}

const char* reduceIsaName() { return activeTable().name; }

const char* setReduceIsaForTesting(const char* isa) {
  const KernelTable* table = &resolveTable(isa);
  gTable.store(table, std::memory_order_release);
  return table->name;
}

}  // namespace tern
