// Which algorithm runs a collective: the TERN_ALGO / config override first (NCCL syntax: "ring",
// "allreduce:rhd;allgather:ring", "^tree" to exclude), then the planner's choice.
#pragma once

#include <string>

#include "algorithms/collective.hpp"
#include "algorithms/registry.hpp"

namespace tern {

struct AlgoOverride {
  // Parses the spec; throws ternInvalidArgument naming the bad part.
  static AlgoOverride parse(const std::string& spec);
  // Forced algorithm name for c ("" if none), and whether name is excluded for c.
  std::string forced(Collective c) const;
  bool excluded(Collective c, const std::string& name) const;

  struct Rule {
    Collective collective;  // kCount = every collective
    std::vector<std::string> names;
    bool exclude = false;
  };
  std::vector<Rule> rules;
};

struct ChoiceContext {
  int nranks = 1;
  bool multiHost = false;
};

// Picks the algorithm for args among the registered ones.
const AlgorithmInfo& chooseAlgorithm(const CollArgs& args, const ChoiceContext& ctx, const AlgoOverride& override);

Collective parseCollectiveName(const std::string& name, bool* ok);

}  // namespace tern
