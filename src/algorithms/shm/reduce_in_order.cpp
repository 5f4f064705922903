#include <cstring>

#include "algorithms/shm/direct_call.hpp"
#include "base/dtype.hpp"
#include "kernels/reduce.hpp"

namespace tern::shm {

void reduceInOrder(void* dst, const void* const* srcs, int n, size_t count, ternDataType_t dtype, ternRedOp_t op,
                   int avgDivisor, void* tmp) {
  if (count == 0) return;
  if (n == 1) {
    if (dst != srcs[0]) std::memmove(dst, srcs[0], count * dataTypeSize(dtype));
  } else {
    int alias = -1;
    for (int i = 2; i < n; ++i) {
      if (srcs[i] == dst) alias = i;
    }
    void* acc = alias >= 0 ? tmp : dst;
    reduce(n == 2 ? dst : acc, srcs[0], srcs[1], count, dtype, op);
    for (int i = 2; i < n; ++i) reduce(i == n - 1 ? dst : acc, acc, srcs[i], count, dtype, op);
  }
  if (op == ternAvg) finalizeAverage(dst, count, dtype, avgDivisor);
}

uint64_t argsKey(const CollArgs& a) {
  uint64_t k = static_cast<uint64_t>(a.count);
  k = k * 31 + static_cast<uint64_t>(a.coll);
  k = k * 31 + static_cast<uint64_t>(a.dtype);
  k = k * 31 + static_cast<uint64_t>(a.op);
  k = k * 31 + static_cast<uint64_t>(a.root);
  return k;
}

}  // namespace tern::shm
