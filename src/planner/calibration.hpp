// Calibration files: measured cost-model parameters that override the defaults, in the library (TERN_TUNE_FILE)
// and in tern-calc (--tune FILE; `tern-calc --calibrate` writes them). Every rank of a job must read the same file:
// ranks that price differently may choose different algorithms and never match.
//
// Schema, version 1 (all fields but "version" optional; docs/TUNING.md has the long form):
//
//   {
//     "version": 1,
//     "links": {                                   per link class: shm, loopback, nvlink, pcie, smp, network,
//       "loopback": {"alpha_us": 18.5, "bandwidth_gbs": 1.7,          or network:ethernet|roce|ib
//                    "cache_bandwidth_gbs": 3.1, "cache_bytes": 4194304},   same-host classes: while a call's
//                                                  per-rank working set fits in cache_bytes
//       "network":  {"alpha_us": 62.0, "bandwidth_gbs": 0.112, "speed_gbps": 1}
//     },                                           bandwidth per direction, GB/s = 1e9 B/s; beta = 1/bandwidth.
//                                                  speed_gbps: the line rate it was measured at (network only):
//                                                  other line rates keep the measured efficiency.
//     "compute": {"cpu": {"reduce_gbs": 6.0, "copy_gbs": 10.0}, "gpu": {"reduce_gbs": 1000, "copy_gbs": 1000}},
//                                                  reduce: output bytes per second of an element-wise reduction
//     "codecs": {"sign": {"encode_gbs": 3.0, "decode_gbs": 8.5,     fp32 bytes per second, by codec name or spec;
//                         "cache_speedup": 4.7, "cache_bytes": 16777216}},   optional in-cache speedup
//     "shm_direct": {"alpha_us": 3.0, "busbw_gbs": 3.9, "cache_busbw_gbs": 6.0, "cache_bytes": 33554432},
//                                                  shared-memory direct collectives (replaces the next entry)
//     "shm_algorithms": {"small_alpha_us": 1.5, "small_gbs": 9.0, "pipelined_alpha_us": 10,
//     "pipelined_busbw_gbs": 3.5},
//                                                  the shared-memory algorithms' own model (the defaults shown)
//     "cache_bytes": 4194304,                      default cache size of entries with a cache figure but no size
//     "fit": {...}                                 written by tern-calc --calibrate for people; ignored on load
//   }
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "planner/cost_params.hpp"

namespace tern::planner {

inline constexpr int kCalibrationVersion = 1;
inline constexpr const char* kTuneFileEnv = "TERN_TUNE_FILE";

// Applies a calibration document on top of params. Errors are Error(ternInvalidArgument, "<source>: <what>").
void applyCalibration(const nlohmann::json& doc, CostParams& params, const std::string& source);
// Reads and applies a file (JSON text). Errors name the file.
void applyCalibrationFile(const std::string& path, CostParams& params);

// The document for params: every calibrated link, the compute figures, codec overrides and the direct path.
nlohmann::ordered_json calibrationToJson(const CostParams& params);

// The library's parameters: defaults, with TERN_TUNE_FILE applied when set. Read once per process; a bad file
// throws (on every call) Error(ternInvalidArgument) naming TERN_TUNE_FILE.
const CostParams& processCostParams();

}  // namespace tern::planner
