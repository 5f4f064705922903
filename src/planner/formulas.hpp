// Closed-form costs of the algorithms (Thakur, Rabenseifner & Gropp 2005, and the hierarchical composition), in
// the alpha-beta-gamma model: p ranks, n bytes (the collective's total, nccl-tests "size"), alpha seconds per
// message, beta seconds per byte, gamma seconds per byte reduced. They assume every link is alike and nothing is
// pipelined or shared, so they are what tern-calc prints to explain a prediction and what the tests check the
// simulator against, not what the planner decides with (it simulates the actual schedules, planner/simulator.hpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "exec/collective.hpp"

namespace tern::planner {

struct FormulaInputs {
  int p = 2;         // ranks
  double n = 0;      // bytes
  double alpha = 0;  // seconds
  double beta = 0;   // seconds per byte
  double gamma = 0;  // seconds per byte
  // Hierarchical algorithms: `nodes` nodes of `perNode` ranks, intra-node links (alpha, beta above) and the
  // network's; `nicShare` ranks of a node share one NIC (their inter-node streams divide its bandwidth).
  int nodes = 1;
  int perNode = 1;
  double alphaNet = 0;
  double betaNet = 0;
  int nicShare = 1;
};

struct Formula {
  double seconds = 0;
  std::string text;  // e.g. "2(p-1)a + 2(p-1)/p n b + (p-1)/p n g"
};

// The formula of an algorithm of the registry (or "compressed"-free names only); nullopt when there is none.
std::optional<Formula> closedForm(Collective c, std::string_view algorithm, const FormulaInputs& in);

// ceil(log2(p)), 0 for p <= 1.
int ceilLog2(int p);

}  // namespace tern::planner
