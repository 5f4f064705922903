// The shared-memory algorithms as catalogue entries (algorithms/registry.hpp): names, what the arguments of a call
// must be for each to apply, the default choice among them and their cost. Pure functions of the arguments and
// the rank count; what depends on the buffers and the processes (CMA, mapping) is decided per call by
// DirectCollectives, identically on every rank.
//
//   shm_small     one phase through per-rank small areas (small calls and barriers);
//   shm_pipelined chunked reduce-own-slice-then-gather through staging slots, or reading buffers in place;
//   shm_cma       one pass reading peers' ordinary buffers by CMA (ranks in separate processes);
//   shm_mapped    one pass over every rank's buffers addressed in place (allreduce).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "algorithms/collective.hpp"

namespace tern::planner {
struct CostParams;
}  // namespace tern::planner

namespace tern::shm {

enum class ShmAlgorithm { kNone, kSmall, kPipelined, kCma, kMapped };

const char* shmAlgorithmName(ShmAlgorithm a);           // "" for kNone
ShmAlgorithm shmAlgorithmNamed(std::string_view name);  // kNone when name is no shared-memory algorithm

// Bytes of the input and output buffers of one rank.
size_t shmInputBytes(const CollArgs& a, int nranks);
size_t shmOutputBytes(const CollArgs& a, int nranks);

// Largest per-rank input the default choice runs in one phase. The one-phase algorithm makes every rank reduce every
// rank's data (n times the work of the pipelined one) but synchronises once instead of a few times per chunk, so
// for reductions the limit shrinks with n squared; gathers do the same copying either way, so theirs is fixed.
size_t shmSmallLimit(Collective c, int nranks);

// The default for a call: kSmall up to shmSmallLimit, kPipelined beyond (DirectCollectives then takes the CMA or
// mapped form where every rank's buffers allow it), kNone for collectives without a shared-memory form.
ShmAlgorithm defaultShmAlgorithm(const CollArgs& a, int nranks);

// Whether algorithm a can run args on nranks ranks of one host as far as the arguments tell; *why says why not.
bool shmApplies(ShmAlgorithm a, const CollArgs& args, int nranks, std::string* why);

// Predicted seconds of a for args on nranks ranks (CostParams::shmAlgorithms; algorithms/shm/direct_cost.cpp).
double shmSeconds(ShmAlgorithm a, const CollArgs& args, int nranks, const planner::CostParams& params);

// The catalogue's per-entry functions (AppliesFn, CostFn of algorithms/registry.hpp).
bool shmSmallApplies(const CollArgs& args, int nranks, std::string* why);
bool shmPipelinedApplies(const CollArgs& args, int nranks, std::string* why);
bool shmCmaApplies(const CollArgs& args, int nranks, std::string* why);
bool shmMappedApplies(const CollArgs& args, int nranks, std::string* why);
double shmSmallCost(const CollArgs& args, int nranks, const planner::CostParams& params);
double shmChunkedCost(const CollArgs& args, int nranks, const planner::CostParams& params);

}  // namespace tern::shm
