#include "moe_route.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace tern::train::detail {

SendPlan planSend(const int* expertIds, const float* gates, size_t tokens, int topK, int experts, int nranks,
                  float capacityFactor) {
  SendPlan plan;
  plan.perExpert.assign(experts, 0);
  plan.perRank.assign(nranks, 0);
  plan.capacity = capacityFactor > 0 ? static_cast<size_t>(std::ceil(static_cast<double>(capacityFactor) *
                                                                     static_cast<double>(tokens) * topK / experts))
                                     : std::numeric_limits<size_t>::max();
  // First pass: accept in priority order, remembering each kept assignment's slot within its expert.
  std::vector<size_t> slot;
  for (int k = 0; k < topK; ++k) {
    for (size_t t = 0; t < tokens; ++t) {
      int e = expertIds[t * topK + k];
      if (e < 0) continue;
      ++plan.assignments;
      if (plan.perExpert[e] >= plan.capacity) {
        ++plan.dropped;
        continue;
      }
      plan.kept.push_back({t, k, e, 0, gates[t * topK + k]});
      slot.push_back(plan.perExpert[e]++);
    }
  }
  std::vector<size_t> offset(experts + 1, 0);
  for (int e = 0; e < experts; ++e) offset[e + 1] = offset[e] + plan.perExpert[e];
  for (size_t i = 0; i < plan.kept.size(); ++i) plan.kept[i].pos = offset[plan.kept[i].expert] + slot[i];
  const int perRankExperts = experts / nranks;
  for (int e = 0; e < experts; ++e) plan.perRank[e / perRankExperts] += plan.perExpert[e];
  return plan;
}

RecvPlan planRecv(const std::vector<uint64_t>& counts, int sources, int localExperts) {
  RecvPlan p;
  p.sources = sources;
  p.localExperts = localExperts;
  p.counts.assign(counts.begin(), counts.end());
  p.perSource.assign(sources, 0);
  p.perExpert.assign(localExperts, 0);
  p.expertOffset.assign(localExperts, 0);
  for (int s = 0; s < sources; ++s) {
    for (int j = 0; j < localExperts; ++j) {
      size_t c = p.counts[s * localExperts + j];
      p.perSource[s] += c;
      p.perExpert[j] += c;
      p.total += c;
    }
  }
  for (int j = 1; j < localExperts; ++j) p.expertOffset[j] = p.expertOffset[j - 1] + p.perExpert[j - 1];
  return p;
}

namespace {

// Calls f(sourceMajorRow, expertMajorRow, rows) for every (source, expert) block.
template <typename F>
void forEachBlock(const RecvPlan& p, F&& f) {
  std::vector<size_t> filled(p.localExperts, 0);
  size_t srcRow = 0;
  for (int s = 0; s < p.sources; ++s) {
    for (int j = 0; j < p.localExperts; ++j) {
      size_t c = p.counts[s * p.localExperts + j];
      f(srcRow, p.expertOffset[j] + filled[j], c);
      filled[j] += c;
      srcRow += c;
    }
  }
}

}  // namespace

void RecvPlan::sourceToExpert(const float* src, float* dst, size_t width) const {
  forEachBlock(*this, [&](size_t s, size_t e, size_t rows) {
    if (rows > 0) std::memcpy(dst + e * width, src + s * width, rows * width * sizeof(float));
  });
}

void RecvPlan::expertToSource(const float* src, float* dst, size_t width) const {
  forEachBlock(*this, [&](size_t s, size_t e, size_t rows) {
    if (rows > 0) std::memcpy(dst + s * width, src + e * width, rows * width * sizeof(float));
  });
}

}  // namespace tern::train::detail
