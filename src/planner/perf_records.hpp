// Reading the perf binaries' JSON output (-J FILE), the measurements the calibration fits and tern-calc --check
// compares against:
//
//   {"collective": "allreduce", "binary": "all_reduce_perf", "nranks": 2, "transport": "tcp", "compress": "",
//    "forced_algo": "", "nodes": 2 (optional),
//    "results": [{"size": 1048576, "count": 262144, "type": "float", "redop": "sum", "root": -1,
//                 "algorithm": "ring", "predicted_us": 412.0,
//                 "out_of_place": {"time_us": 431.5, "algbw": 2.43, "busbw": 2.43, "wrong": 0},
//                 "in_place": {...}}, ...]}
//
// The out-of-place time is the measurement (the nccl-tests convention for the headline busbw). How many hosts the
// ranks ran on is not in the file unless it has "nodes"; the caller says it otherwise (PerfRun::nodes).
#pragma once

#include <string>
#include <vector>

#include "exec/collective.hpp"
#include "planner/model_link.hpp"

namespace tern::planner {

struct PerfPoint {
  double bytes = 0;
  double seconds = 0;
  std::string algorithm;
};

struct PerfRun {
  std::string source;
  Collective collective = Collective::kAllReduce;
  std::string collectiveName;
  int nranks = 0;
  int nodes = 1;
  std::string transport;  // "tcp", "shm", "shm+tcp", "inproc", ...
  std::string compress;   // codec spec, "" when uncompressed
  ternDataType_t dtype = ternFloat32;
  std::vector<PerfPoint> points;

  // How same-host ranks of this run talked: TCP loopback for "tcp", shared memory otherwise.
  IntraTransport intra() const;
};

// Loads a file. `path` may end in "@N" (N nodes) when the file has no "nodes". Errors: Error(ternInvalidArgument,
// "<path>: <what>").
PerfRun loadPerfRun(const std::string& pathSpec, int defaultNodes = 1);

}  // namespace tern::planner
