// Words for numbers: what limits a predicted time, what the job's links are, and the small parsers the reports
// share (collective and element type names).
#pragma once

#include <string>

#include "exec/collective.hpp"
#include "planner/planner.hpp"

namespace tern::calc {

// The largest term of a critical path, e.g. "network bandwidth (91%)".
std::string limitedBy(const planner::Breakdown& b);
// The busiest port, e.g. "host a-0 nic0 (mlx5_0) egress 99%, shared by 2 ranks"; "" when nothing was sent.
std::string busiest(const planner::Estimate& e);
// One line per link class of the job: latency, bandwidth, and how many ranks share a NIC.
std::string linksSummary(const planner::Planner& p);
// The network's line rate in bytes per second (the slowest NIC), 0 on one host.
double networkLineRate(const planner::Planner& p);
// Ranks sharing the busiest-shared NIC.
int ranksPerNic(const planner::Planner& p);

Collective parseCollective(const std::string& name);  // throws for unknown names
ternDataType_t parseDtype(const std::string& name);   // float/fp32, half/fp16, bfloat16/bf16, double, int32, ...

}  // namespace tern::calc
