// Geometry shared by the schedule builders: how a buffer is cut into blocks (one per rank, or per ring/tree
// position) and blocks into pipeline chunks, and the rank orders that rings, chains, trees and power-of-two folds
// walk. Everything here is a pure function of (count, nranks, options): every rank computes the same cuts, which is
// what lets a sender and a receiver agree on message sizes without talking to each other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "exec/collective.hpp"

namespace tern::algo {

// Elements [offset, offset + count) of the collective's buffer layout (not bytes: builders think in elements and
// convert at the last moment, so that every span stays element-aligned).
struct ElemRange {
  size_t offset = 0;
  size_t count = 0;
  size_t end() const { return offset + count; }
};

// A block is what one ring position (or tree, or group member) owns: usually one range, several when the owner's
// share is scattered over the buffer (hierarchical algorithms with uneven nodes).
using Block = std::vector<ElemRange>;

// Part i of `count` elements cut into `parts` near-equal parts; the first count % parts parts get one element more.
// Parts are contiguous and in order, so parts [a, b) together are one range.
ElemRange evenPart(size_t count, size_t parts, size_t i, size_t base = 0);

// The contiguous range covering parts [first, last) of evenPart(count, parts, ., base).
ElemRange evenParts(size_t count, size_t parts, size_t first, size_t last, size_t base = 0);

// Elements per pipeline chunk: pipelineChunkBytes rounded down to whole elements, at least one. A chunk size of 0
// disables chunking (one piece per range).
size_t chunkElems(const BuildOptions& options, size_t esize);

// Cuts r into ceil(r.count / maxElems) near-equal pieces and appends them (nothing when r is empty). Near-equal
// rather than "full chunks plus a remainder" because the slowest piece paces a pipeline.
void appendPieces(std::vector<ElemRange>& out, const ElemRange& r, size_t maxElems);

// The pieces of every range of a block, in order.
std::vector<ElemRange> pieces(const Block& block, size_t maxElems);

// Largest piece count of a list of pieces (0 when empty).
size_t maxCount(const std::vector<ElemRange>& pieces);

inline int mod(int a, int n) { return ((a % n) + n) % n; }

// The order of rings and chains: options.ringOrder when given (validated: a permutation of 0..nranks-1, else
// ternInvalidArgument), identity otherwise. order[position] = rank.
std::vector<int> ringOrder(const BuildOptions& options, int nranks);

// Position of rank in order (order must contain it).
int positionOf(const std::vector<int>& order, int rank);

// Power-of-two fold for recursive doubling/halving on any rank count (the MPICH scheme). With pof2 the largest power
// of two <= nranks and rem = nranks - pof2, the first 2*rem ranks pair up: even rank 2i hands its data to odd rank
// 2i+1 and sits out, which leaves exactly pof2 participants, numbered 0..pof2-1 ("newranks"). Newrank i stands for
// the contiguous rank range [firstRank(i), firstRank(i + 1)), two ranks for i < rem and one otherwise, so any
// group of consecutive newranks covers a contiguous range of ranks (and of rank-indexed blocks).
struct Fold {
  int nranks = 1;
  int pof2 = 1;
  int rem = 0;
  // -1 for ranks that sit out (even ranks below 2*rem).
  int newrank(int rank) const { return rank < 2 * rem ? (rank % 2 == 1 ? rank / 2 : -1) : rank - rem; }
  // The rank that takes part as newrank nr.
  int rankOf(int nr) const { return nr < rem ? 2 * nr + 1 : nr + rem; }
  // First rank that newrank nr stands for; firstRank(pof2) == nranks.
  int firstRank(int nr) const { return nr < rem ? 2 * nr : nr + rem; }
};
Fold makeFold(int nranks);

// Parent and children of one node of a tree over positions 0..n-1.
struct TreeLinks {
  int parent = -1;  // -1 at the root
  std::vector<int> children;
};

// NCCL-style in-order binary tree on positions 0..n-1: the root is 0 with a single child (the largest power of two
// below n); every other node v with lowest set bit b has children v - b/2 and v + b/2 (the latter shrunk until it
// is in range). Leaves are exactly the odd positions. Depth is about log2(n).
TreeLinks btreeLinks(int n, int node);

// The complementary tree of the double binary tree: the btree mirrored (v -> n-1-v) when n is even, shifted by one
// (v -> v+1) when n is odd. Even n: every leaf (odd position) of one tree is an inner node of the other, so every
// rank sends and receives about the same amount in total over the two trees.
TreeLinks btreeComplementLinks(int n, int node);

}  // namespace tern::algo
