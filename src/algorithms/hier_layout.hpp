// Node structure for the hierarchical algorithms: which ranks share a host (BuildOptions::hostOf), and how the
// work is divided so that the inter-node traffic is spread over every rank of a node instead of one leader.
//
// With nodes of g_k ranks and M = max_k g_k, the data is cut into M "slices" (per-rank blocks for allgather and
// reduce-scatter). On node k, local rank l is responsible for the slices j with j mod g_k == l. Inter-node group j
// is {the rank responsible for slice j on node k, for every node k}, in node order. With equal node sizes (the
// usual case) each rank has exactly one slice and group j is simply "local rank j of every node"; with uneven
// nodes, ranks of smaller nodes serve several groups, and every slice still crosses the network exactly once per
// node.
#pragma once

#include <cstddef>
#include <vector>

#include "exec/collective.hpp"

namespace tern::algo {

struct HostLayout {
  std::vector<std::vector<int>> nodes;  // ranks of each node, in ring order; nodes ordered by their first rank
  int myNode = 0;
  int myLocal = 0;
  size_t slices = 1;  // M: the largest node size

  int nodeSize(int k) const { return static_cast<int>(nodes[k].size()); }
  // The rank on node k responsible for slice j.
  int responsible(int k, size_t j) const { return nodes[k][j % nodes[k].size()]; }
  bool mine(size_t j) const { return static_cast<int>(j % nodes[myNode].size()) == myLocal; }
  // The inter-node group of slice j (one rank per node, in node order); this rank is at position myNode.
  std::vector<int> group(size_t j) const;
};

// Validates hostOf (size nranks, else ternInvalidArgument); an empty hostOf means one node.
HostLayout hostLayout(const BuildOptions& options, int rank, int nranks);

}  // namespace tern::algo
