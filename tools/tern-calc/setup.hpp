// Turns the topology options into what the reports price: the job, how its same-host ranks talk, the cost
// parameters (defaults, --tune or TERN_TUNE_FILE) and a description for the header.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "options.hpp"
#include "planner/cluster_spec.hpp"
#include "planner/planner.hpp"

namespace tern::calc {

struct Setup {
  std::shared_ptr<const topo::JobTopology> job;
  planner::IntraTransport intra = planner::IntraTransport::kTopology;
  std::optional<planner::ClusterSpec> spec;  // when the job came from a preset or flags (it can then be rescaled)
  std::string title;                         // "roce25-2x2", a file name, or "custom"
  std::string description;
  planner::CostParams params;
  std::string paramsSource;  // "defaults" or the calibration file
  size_t chunkBytes = 512 * 1024;

  // A planner over this setup (or over the first `hosts` hosts of it).
  planner::PlannerConfig config(int hosts = 0) const;
};

// The cost parameters alone (--tune, else TERN_TUNE_FILE, else defaults).
planner::CostParams loadParams(const Options& o, std::string* source);

// Throws tern::Error(ternInvalidArgument) for bad input.
Setup resolveSetup(const Options& o);
bool hasTopology(const Options& o);

}  // namespace tern::calc
