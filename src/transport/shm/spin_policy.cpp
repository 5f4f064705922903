#include "transport/shm/spin_policy.hpp"

#include <sched.h>

#include <thread>

namespace tern::shm {

namespace {

int usableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace

// TODO(measure): numbers below are placeholders until the benchmark is run.
SpinPolicy chooseSpinPolicy(int localRanks) {
  SpinPolicy p;
  if (localRanks <= usableCpus()) {
    p.spinNs = 50000;
    p.yields = 0;
  } else {
    p.spinNs = 0;
    p.yields = 1;
  }
  return p;
}

}  // namespace tern::shm
