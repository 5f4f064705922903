#include "algorithms/chunking.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace tern::algo {

ElemRange evenPart(size_t count, size_t parts, size_t i, size_t base) {
  const size_t q = count / parts;
  const size_t r = count % parts;
  return {base + i * q + std::min(i, r), q + (i < r ? 1 : 0)};
}

ElemRange evenParts(size_t count, size_t parts, size_t first, size_t last, size_t base) {
  if (first >= last) return {evenPart(count, parts, first < parts ? first : parts - 1, base).offset, 0};
  const ElemRange a = evenPart(count, parts, first, base);
  const ElemRange b = evenPart(count, parts, last - 1, base);
  return {a.offset, b.end() - a.offset};
}

size_t chunkElems(const BuildOptions& options, size_t esize) {
  if (options.pipelineChunkBytes == 0 || esize == 0) return SIZE_MAX;
  return std::max<size_t>(1, options.pipelineChunkBytes / esize);
}

void appendPieces(std::vector<ElemRange>& out, const ElemRange& r, size_t maxElems) {
  if (r.count == 0) return;
  const size_t n = r.count / maxElems + (r.count % maxElems != 0 ? 1 : 0);
  for (size_t i = 0; i < n; ++i) out.push_back(evenPart(r.count, n, i, r.offset));
}

std::vector<ElemRange> pieces(const Block& block, size_t maxElems) {
  std::vector<ElemRange> out;
  for (const ElemRange& r : block) appendPieces(out, r, maxElems);
  return out;
}

size_t maxCount(const std::vector<ElemRange>& pieces) {
  size_t m = 0;
  for (const ElemRange& p : pieces) m = std::max(m, p.count);
  return m;
}

std::vector<int> ringOrder(const BuildOptions& options, int nranks) {
  std::vector<int> order(nranks);
  if (options.ringOrder.empty()) {
    for (int i = 0; i < nranks; ++i) order[i] = i;
    return order;
  }
  if (static_cast<int>(options.ringOrder.size()) != nranks) {
    throwError(ternInvalidArgument, "ring order has %zu entries for %d ranks", options.ringOrder.size(), nranks);
  }
  std::vector<bool> seen(nranks, false);
  for (int r : options.ringOrder) {
    if (r < 0 || r >= nranks || seen[r]) {
      throwError(ternInvalidArgument, "ring order is not a permutation of 0..%d (bad or repeated rank %d)", nranks - 1,
                 r);
    }
    seen[r] = true;
  }
  return options.ringOrder;
}

int positionOf(const std::vector<int>& order, int rank) {
  auto it = std::find(order.begin(), order.end(), rank);
  if (it == order.end()) throwError(ternInternalError, "rank %d missing from a ring order", rank);
  return static_cast<int>(it - order.begin());
}

Fold makeFold(int nranks) {
  Fold f;
  f.nranks = nranks;
  while (f.pof2 * 2 <= nranks) f.pof2 *= 2;
  f.rem = nranks - f.pof2;
  return f;
}

TreeLinks btreeLinks(int n, int node) {
  TreeLinks t;
  if (n <= 1) return t;
  if (node == 0) {
    int top = 1;
    while (top * 2 < n) top *= 2;
    t.children.push_back(top);
    return t;
  }
  const int bit = node & -node;
  int up = (node ^ bit) | (bit << 1);
  if (up >= n) up = node ^ bit;
  t.parent = up;
  int low = bit >> 1;
  if (low > 0) {
    t.children.push_back(node - low);
    while (low > 0 && node + low >= n) low >>= 1;
    if (low > 0) t.children.push_back(node + low);
  }
  return t;
}

TreeLinks btreeComplementLinks(int n, int node) {
  TreeLinks t;
  if (n <= 1) return t;
  auto to = [n](int v) { return n % 2 == 0 ? n - 1 - v : mod(v - 1, n); };
  auto back = [n](int v) { return n % 2 == 0 ? n - 1 - v : mod(v + 1, n); };
  TreeLinks b = btreeLinks(n, to(node));
  t.parent = b.parent < 0 ? -1 : back(b.parent);
  for (int c : b.children) t.children.push_back(back(c));
  return t;
}

}  // namespace tern::algo
