#include "transport/spin_policy.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <thread>

#include "base/env.hpp"

namespace tern {

namespace {

constexpr int64_t kOversubscribedYieldPollNs = 200000;
// Ranks that own their CPUs may spin through waits up to this long. The budget adapts to the waits actually seen
// (SpinBudget::sleptThrough), so it reaches the ceiling only where waits end within it: a large block's copy on the
// other side (hundreds of microseconds), which with a short ceiling paid a sleeping vCPU's wake-up on every call.
// A wait for a peer that computes, or anything longer, halves it back towards the floor.
constexpr int64_t kOwnCpuSpinCeilingNs = 1000000;

// CPUs the node's ranks share. A rank bound to a single CPU was almost certainly placed by a launcher that binds
// one rank per CPU (tern-run --bind-to core, mpirun --bind-to core): its peers run on the other CPUs, so the
// machine's online count is the right figure, not its own mask of one (which would make every wait a short spin
// and a 30 us futex sleep).
int usableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  int own = 0;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) own = CPU_COUNT(&set);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (own == 1 && online > 1) return static_cast<int>(online);
  if (own > 0) return own;
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace

bool ranksOwnCpus(int localRanks) { return localRanks <= usableCpus(); }

CpuMask ownCpuMask() {
  CpuMask mask{};
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return mask;
  for (int cpu = 0; cpu < CPU_SETSIZE && cpu < kCpuMaskWords * 64; ++cpu) {
    if (CPU_ISSET(cpu, &set)) mask[cpu / 64] |= uint64_t{1} << (cpu % 64);
  }
  return mask;
}

bool ranksOwnCpus(const std::vector<CpuMask>& masks) {
  CpuMask all{};
  bool unknown = false;
  for (const CpuMask& m : masks) {
    bool any = false;
    for (int w = 0; w < kCpuMaskWords; ++w) {
      all[w] |= m[w];
      any = any || m[w] != 0;
    }
    unknown = unknown || !any;
  }
  size_t cpus = 0;
  for (uint64_t w : all) cpus += static_cast<size_t>(std::popcount(w));
  if (unknown) cpus = std::max<size_t>(cpus, static_cast<size_t>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN))));
  return masks.size() <= cpus;
}

// Measured with tests/shm/spin_bench (P processes, all-to-all flag barrier with the library's publish/futex protocol)
// on the 2-vCPU development VM, microseconds per barrier, by spin budget:
//
//   spin budget (us)                          0      1      2      5     10     20     50    100
//   2 ranks bound to 2 CPUs                 131     30    8.2    2.1   0.19   0.19   0.63    1.4
//   2 ranks bound, 20 us work per barrier   151      -      -     97     67     75     72      -   (sync part)
//   4 ranks bound to 2 CPUs (2 per CPU)      29     42     37     53     22     31     95      -
//   2 ranks unbound, no co-location rule    117      -     44      -     19      -     81      -
//   2 ranks unbound, co-location rule       1.7      -      -      -    1.4      -    1.5      -
//   4 ranks unbound, co-location rule        74      -      -      -    5.9      -    7.1      -
//   the same, then a 200 us yield poll      2.2      -    2.2      -      -      -      -      -   (spin_bench -y 200)
//   4 ranks bound, 200 us yield poll        1.7      -    3.8      -     12      -      -      -
//
// Sleeping at once costs 100+ us per wake-up (an idle vCPU halts and the host must wake it); a budget of 10 us or
// more hides it when the peer runs on another CPU. Unbound ranks that hand work back and forth end up on one CPU
// (the scheduler pulls a futex wakee to its waker), where any spinning only delays the peer: the co-location rule
// (flag_wait.hpp) makes that case a yield. The floors keep the adaptive budget above the point where sleeping starts
// to cost 100 us.
//
// Ranks that outnumber the CPUs do not spin (a spin starves the spinner's CPU-mate, which may be the rank it waits
// for) and wait by yielding instead, as Open MPI's ranks do when oversubscribed (mpi_yield_when_idle): most of a
// synchronisation's wait is for a rank that is runnable but queued behind another, and sched_yield() runs it at
// once, where a futex sleep makes every hand-over pay a sleep and a wake-up (the table's 4-rank rows: 22-95 us per
// barrier without it, 2 us with it). The yield poll is bounded, so a rank that waits for longer (a slow peer, a peer
// that computes) still sleeps and leaves the CPU to whoever needs it.
SpinPolicy spinPolicyFor(bool ownCpus) {
  SpinPolicy p;
  p.yields = 4;
  if (ownCpus) {
    p.maxSpinNs = kOwnCpuSpinCeilingNs;
    p.minSpinNs = 10000;
  } else {
    // No spin: it would only delay a CPU-mate we may be waiting for; the yield poll hands it the CPU instead.
    p.maxSpinNs = 0;
    p.minSpinNs = 0;
    p.yieldPollNs = kOversubscribedYieldPollNs;
  }
  // TERN_SPIN_US sets the ceiling (0: never spin nor yield-poll, for machines where ranks share their CPUs with
  // other work tern cannot see, such as other jobs); the floor never exceeds it.
  if (const int us = knobs().spinUs; us >= 0) {
    p.maxSpinNs = static_cast<int64_t>(us) * 1000;
    p.minSpinNs = std::min(p.minSpinNs, p.maxSpinNs);
    if (us == 0) p.yieldPollNs = 0;
  }
  return p;
}

}  // namespace tern
