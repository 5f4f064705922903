// Routing plans for MoE dispatch/combine. Pure local arithmetic (no communication), so it is easy to test and
// every rank can derive the receive side from the exchanged counts alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tern::train::detail {

// Source side: which token-expert assignments are kept and where each goes in the send buffer. The send buffer
// is ordered by global expert (hence by owning rank, since rank r owns a contiguous range), then by acceptance
// order, so each destination's rows are one contiguous block.
struct SendPlan {
  struct Kept {
    size_t token;
    int k;  // which of the token's top-k choices
    int expert;
    size_t pos;  // row in the send buffer
    float gate;
  };
  std::vector<Kept> kept;
  std::vector<size_t> perExpert;  // kept rows per global expert
  std::vector<size_t> perRank;    // kept rows per destination rank
  size_t capacity = 0;            // per expert; SIZE_MAX when unlimited
  size_t assignments = 0;
  size_t dropped = 0;
};

// Capacity per expert is ceil(capacityFactor * tokens * topK / experts) (unlimited when capacityFactor <= 0).
// Assignments are accepted first choices first, then in token order (GShard's priority); ids < 0 mean none.
SendPlan planSend(const int* expertIds, const float* gates, size_t tokens, int topK, int experts, int nranks,
                  float capacityFactor);

// Receive side: counts[s * localExperts + j] rows came from source rank s for local expert j. Rows arrive grouped
// by source, then expert ("source-major"); experts want their rows contiguous ("expert-major").
struct RecvPlan {
  int sources = 0;
  int localExperts = 0;
  std::vector<size_t> counts;
  std::vector<size_t> perSource;     // rows from each source
  std::vector<size_t> perExpert;     // rows for each local expert
  std::vector<size_t> expertOffset;  // first row of each expert in the expert-major layout
  size_t total = 0;

  // Moves rows (width floats each) between the two layouts.
  void sourceToExpert(const float* src, float* dst, size_t width) const;
  void expertToSource(const float* src, float* dst, size_t width) const;
};

RecvPlan planRecv(const std::vector<uint64_t>& counts, int sources, int localExperts);

}  // namespace tern::train::detail
