#include "algorithms/hier_layout.hpp"

#include <algorithm>
#include <map>

#include "algorithms/chunking.hpp"
#include "base/error.hpp"

namespace tern::algo {

std::vector<int> HostLayout::group(size_t j) const {
  std::vector<int> g;
  g.reserve(nodes.size());
  for (int k = 0; k < static_cast<int>(nodes.size()); ++k) g.push_back(responsible(k, j));
  return g;
}

HostLayout hostLayout(const BuildOptions& options, int rank, int nranks) {
  if (!options.hostOf.empty() && static_cast<int>(options.hostOf.size()) != nranks) {
    throwError(ternInvalidArgument, "host map has %zu entries for %d ranks", options.hostOf.size(), nranks);
  }
  const std::vector<int> order = ringOrder(options, nranks);
  HostLayout h;
  // Nodes in order of their lowest rank, so that every rank numbers them alike whatever the host ids are.
  std::map<int, int> nodeOfHost;
  for (int r = 0; r < nranks; ++r) {
    const int host = options.hostOf.empty() ? 0 : options.hostOf[r];
    if (nodeOfHost.emplace(host, static_cast<int>(nodeOfHost.size())).second) h.nodes.emplace_back();
  }
  for (int r : order) {
    const int host = options.hostOf.empty() ? 0 : options.hostOf[r];
    h.nodes[nodeOfHost[host]].push_back(r);
  }
  h.slices = 1;
  for (int k = 0; k < static_cast<int>(h.nodes.size()); ++k) {
    h.slices = std::max(h.slices, h.nodes[k].size());
    auto it = std::find(h.nodes[k].begin(), h.nodes[k].end(), rank);
    if (it != h.nodes[k].end()) {
      h.myNode = k;
      h.myLocal = static_cast<int>(it - h.nodes[k].begin());
    }
  }
  return h;
}

}  // namespace tern::algo
