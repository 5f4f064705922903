// TERN_ALGO (or the config's algo string), parsed against the catalogue (algorithms/registry.hpp), NCCL syntax:
// "ring", "allreduce:rhd;allgather:ring", "^tree" to exclude. The choice that applies it is made above
// (core/algo_choice.hpp); the shared-memory direct path reads it too (algorithms/shm/intra_node.cpp).
#pragma once

#include <string>
#include <vector>

#include "exec/collective.hpp"

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

}  // namespace tern
