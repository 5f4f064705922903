#include "transport/shm/kernel_copy_probe.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "base/env.hpp"
#include "transport/shm/process_identity.hpp"

namespace tern::shm {

namespace {

constexpr size_t kProbeBytes = size_t{256} << 10;  // large enough that the per-call cost does not dominate
constexpr int kProbeRounds = 4;                    // best of: the first round also pays the caches' warm-up

double secondsOf(const std::chrono::steady_clock::time_point& start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double measureRatio() {
  // Page-aligned like the buffers the CMA forms read, and written first so that neither copy pays page faults.
  using Buffer = std::unique_ptr<char, decltype(&std::free)>;
  Buffer src(static_cast<char*>(std::aligned_alloc(4096, kProbeBytes)), &std::free);
  Buffer dst(static_cast<char*>(std::aligned_alloc(4096, kProbeBytes)), &std::free);
  if (src == nullptr || dst == nullptr) return 0;
  std::memset(src.get(), 1, kProbeBytes);
  std::memset(dst.get(), 0, kProbeBytes);
  const pid_t self = ::getpid();
  double kernel = 1e9, user = 1e9;
  for (int round = 0; round < kProbeRounds; ++round) {
    auto start = std::chrono::steady_clock::now();
    if (!cmaRead(self, dst.get(), reinterpret_cast<uint64_t>(src.get()), kProbeBytes)) return 0;
    kernel = std::min(kernel, secondsOf(start));
    start = std::chrono::steady_clock::now();
    std::memcpy(dst.get(), src.get(), kProbeBytes);
    asm volatile("" : : "r"(dst.get()) : "memory");  // the copy's result is used (as far as the compiler knows)
    user = std::min(user, secondsOf(start));
  }
  return kernel > 0 ? user / kernel : 0;
}

}  // namespace

double kernelCopyRatio() {
  static const double ratio = [] {
    const double forced = envDecimal("SHM_KERNEL_COPY_RATIO", 0);
    return forced > 0 ? forced : measureRatio();
  }();
  return ratio;
}

bool kernelCopiesSlow() {
  const double r = kernelCopyRatio();
  return r > 0 && r < kSlowKernelCopyRatio;
}

}  // namespace tern::shm
