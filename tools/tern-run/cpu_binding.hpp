// Which CPU each rank started by this tern-run is bound to (--bind-to), like mpirun's --bind-to core.
//
// Why bind: ranks that hand work back and forth through shared memory wake each other through futexes, and the
// scheduler tends to pull a wakee onto its waker's CPU; unbound, two ranks on a two-CPU machine end up sharing one
// CPU and take turns instead of running in parallel (measured: shm allreduce 2 ranks, 1 MiB, ~6 -> ~9 GB/s bound).
#pragma once

#include <string>
#include <vector>

namespace tern::run {

enum class BindTo {
  kAuto,  // core when this tern-run starts the whole job and it fits the CPUs it may use, else none
  kCore,  // local rank i on the i-th usable CPU (wrapping around when there are more ranks than CPUs)
  kNone,  // leave placement to the scheduler
};

// Parses "auto", "core" or "none"; false for anything else.
bool ParseBindTo(const std::string& text, BindTo* out);

// The usable CPUs of this process (its affinity mask), in increasing order.
std::vector<int> UsableCpus();

// CPU for each of nprocs local ranks, or an empty vector for "do not bind". wholeJob: this tern-run starts every
// rank of the job (a multi-node job's launchers would each bind their ranks to the same few CPUs).
std::vector<int> CpusForRanks(BindTo mode, int nprocs, bool wholeJob, const std::vector<int>& usable);

}  // namespace tern::run
