// The shared-memory algorithms as catalogue entries (algorithms/registry.hpp): names, what the arguments of a call
// must be for each to apply, the default choice among them and their cost. Pure functions of the arguments and
// the rank count; what depends on the buffers and the processes (CMA, mapping) is decided per call by
// DirectCollectives, identically on every rank.
//
//   shm_small     one phase through per-rank small areas (small calls and barriers);
//   shm_pipelined chunked reduce-own-slice-then-gather through staging slots, or reading buffers in place;
//   shm_cma       one pass reading peers' ordinary buffers by CMA (ranks in separate processes);
//   shm_mapped    one pass over every rank's buffers addressed in place (allreduce; all-to-all between threads).
// All-to-all and alltoallv (direct_alltoall.cpp) have all four: blocks inline in the staging slots (small), staged in
// rounds (pipelined), pulled from the senders' buffers by CMA or in place (mapped).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "algorithms/shm/direct_cost.hpp"
#include "exec/collective.hpp"

namespace tern::shm {

enum class ShmAlgorithm { kNone, kSmall, kPipelined, kCma, kMapped };

// DirectCollectives::run dispatches all-to-all(v) to directAlltoAll (algorithms/shm/direct_call.hpp), so the
// catalogue lists its entries. (The switch goes once the tests stop asking it.)
constexpr bool kAlltoAllDispatched = true;
bool isAlltoAll(Collective c);

const char* shmAlgorithmName(ShmAlgorithm a);           // "" for kNone
ShmAlgorithm shmAlgorithmNamed(std::string_view name);  // kNone when name is no shared-memory algorithm

// Bytes of the input and output buffers of one rank.
size_t shmInputBytes(const CollArgs& a, int nranks);
size_t shmOutputBytes(const CollArgs& a, int nranks);

// Largest per-rank input the default choice runs in one phase. The one-phase algorithm makes every rank reduce every
// rank's data (n times the work of the pipelined one) but synchronises once instead of a few times per chunk, so
// for reductions the limit shrinks with n squared; gathers do the same copying either way, so theirs is fixed.
size_t shmSmallLimit(Collective c, int nranks);

// All-to-all: the most bytes a rank sends to its peers inline in its staging slot (beyond, they are read from its
// buffer by CMA or in place, or staged in rounds). Two copies and one synchronisation beat a system call per peer
// and an end barrier up to about 16 KiB per peer (2 ranks: 32 KiB per peer already reads faster by CMA; 4 ranks
// sharing 2 CPUs: 16 KiB per peer inline, 32 KiB by CMA); in place, reading from the buffer costs a third copy
// (the private one), so inline wins up to the slot.
size_t shmAlltoAllInlineLimit(const CollArgs& a, int nranks);

// Whether an all-to-all (equal counts) runs as a one-phase call through the small areas (small_collective.cpp)
// instead of exchanging tables first: when every block is known from the arguments alone, a table says nothing the
// receiver does not know, and the flag's line carries the arguments' key. Decided from what every rank agrees on
// (count, datatype, rank count; not whether this rank's call is in place): every rank takes the same path.
// forcedSmall: TERN_ALGO names shm_small, which runs this way wherever the blocks fit the small area.
bool shmAlltoAllOnePhase(const CollArgs& a, int nranks, bool forcedSmall);

// Ordinary buffers of at least this many input bytes per rank, between processes that may read each other, take the
// CMA form (the TERN_SHM_CMA_MIN_BYTES knob overrides it for every collective), in place of the one-phase form below
// its limit too when every rank can read every other (DirectCollectives::cmaReplacesOnePhase). Allgather and
// broadcast copy the same bytes either way, one kernel copy out of the peer's buffer against two through the shared
// slots, so CMA pays once a copy costs more than a system call: a few KB. An allreduce's one-phase form has every
// rank fold every rank's whole input, n times what the CMA form reads and writes per rank, against 2(n - 1) system
// calls: tens of KB. From 3 ranks on, where ranks often outnumber the CPUs and every system call's piece waits on a
// rank that may not be running, they start higher: gathers where the one-phase form ends, allreduces at 128 KB.
size_t shmCmaMinBytes(Collective c, int nranks);

// The default for a call: kSmall up to shmSmallLimit, kPipelined beyond (DirectCollectives then takes the CMA or
// mapped form where every rank's buffers allow it), kNone for collectives without a shared-memory form. All-to-all:
// kSmall when the blocks fit inline, else kPipelined (the run then reads by CMA or in place where it can);
// alltoallv always kPipelined, since its sizes differ between ranks and every rank must take the same entry (the run
// still sends inline the ranks whose blocks fit).
ShmAlgorithm defaultShmAlgorithm(const CollArgs& a, int nranks);

// Whether algorithm a can run args on nranks ranks of one host as far as the arguments tell; *why says why not.
bool shmApplies(ShmAlgorithm a, const CollArgs& args, int nranks, std::string* why);

// Predicted seconds of a for args on nranks ranks (ShmAlgorithmCost, CostParams::shmAlgorithms;
// algorithms/shm/direct_cost.cpp).
double shmSeconds(ShmAlgorithm a, const CollArgs& args, int nranks, const ShmAlgorithmCost& params);

// The catalogue's per-entry functions (AppliesFn, CostFn of algorithms/registry.hpp).
bool shmSmallApplies(const CollArgs& args, int nranks, std::string* why);
bool shmPipelinedApplies(const CollArgs& args, int nranks, std::string* why);
bool shmCmaApplies(const CollArgs& args, int nranks, std::string* why);
bool shmMappedApplies(const CollArgs& args, int nranks, std::string* why);
double shmSmallCost(const CollArgs& args, int nranks, const ShmAlgorithmCost& params);
double shmChunkedCost(const CollArgs& args, int nranks, const ShmAlgorithmCost& params);

}  // namespace tern::shm
