#include "cpu_binding.hpp"

#include <sched.h>

namespace tern::run {

bool ParseBindTo(const std::string& text, BindTo* out) {
  if (text == "auto") {
    *out = BindTo::kAuto;
  } else if (text == "core") {
    *out = BindTo::kCore;
  } else if (text == "none") {
    *out = BindTo::kNone;
  } else {
    return false;
  }
  return true;
}

std::vector<int> UsableCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

std::vector<int> CpusForRanks(BindTo mode, int nprocs, bool wholeJob, const std::vector<int>& usable) {
  if (usable.empty() || nprocs < 1 || mode == BindTo::kNone) return {};
  // Oversubscribed ranks are better left to the scheduler: pinned two to a CPU, one of a pair cannot use an idle
  // CPU while its partner spins or computes.
  if (mode == BindTo::kAuto && (!wholeJob || static_cast<size_t>(nprocs) > usable.size())) return {};
  std::vector<int> cpus(static_cast<size_t>(nprocs));
  for (int i = 0; i < nprocs; ++i) cpus[static_cast<size_t>(i)] = usable[static_cast<size_t>(i) % usable.size()];
  return cpus;
}

}  // namespace tern::run
