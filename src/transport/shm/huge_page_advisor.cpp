#include "transport/shm/huge_page_advisor.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/env.hpp"
#include "base/log.hpp"

// Older libc headers lack it; the kernel's value is fixed (include/uapi/asm-generic/mman-common.h).
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

namespace tern::shm {

HugePageAdvisor::HugePageAdvisor(bool enabled, Pacing pacing) : enabled_(enabled), pacing_(pacing) {
  if (!(pacing_.maxShare > 0.0) || pacing_.maxShare > 1.0) pacing_.maxShare = 1.0;
}

bool HugePageAdvisor::enabledByEnvironment() { return envFlag("SHM_HUGEPAGES", true); }

std::vector<uintptr_t> HugePageAdvisor::regionsOf(const void* p, size_t bytes) {
  std::vector<uintptr_t> out;
  if (p == nullptr || bytes < kRegionBytes / 2) return out;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
  if (bytes > UINTPTR_MAX - begin) return out;
  const uintptr_t end = begin + bytes;
  for (uintptr_t r = begin & ~(kRegionBytes - 1); r < end; r += kRegionBytes) {
    const uintptr_t lo = r > begin ? r : begin;
    const uintptr_t hi = r + kRegionBytes < end ? r + kRegionBytes : end;
    if (hi - lo >= kRegionBytes / 2) out.push_back(r);
    if (r > UINTPTR_MAX - kRegionBytes) break;
  }
  return out;
}

size_t HugePageAdvisor::onBuffer(const void* p, size_t bytes) {
  if (!enabled_) return 0;
  const std::vector<uintptr_t> regions = regionsOf(p, bytes);
  if (regions.empty()) return 0;
  size_t now = 0;
  Clock::time_point t = Clock::now();
  for (uintptr_t r : regions) {
    auto it = regions_.find(r);
    if (it == regions_.end()) {
      if (regions_.size() < kMaxRegions) regions_.emplace(r, Region{RegionState::kSeen, t});
      continue;
    }
    Region& region = it->second;
    if (region.state != RegionState::kSeen && region.state != RegionState::kRetry) continue;
    if (t - region.firstSeen < pacing_.minAge || t < nextCollapse_) continue;
    const int rc = ::madvise(reinterpret_cast<void*>(r), kRegionBytes, MADV_COLLAPSE);
    const Clock::time_point done = Clock::now();
    nextCollapse_ = done + std::chrono::duration_cast<Clock::duration>((done - t) * (1.0 / pacing_.maxShare - 1.0));
    t = done;
    if (rc == 0) {
      region.state = RegionState::kCollapsed;
      ++collapsed_;
      ++now;
      continue;
    }
    // EAGAIN: transient (a page locked or briefly pinned), worth one more try on a later call. EINVAL: a kernel
    // before 6.1, or memory that may not use huge pages (THP "never", MADV_NOHUGEPAGE, a region straddling two
    // mappings); ENOMEM: part of the region is not mapped, or no huge page could be had. Either way the buffer
    // keeps working with small pages.
    const int err = errno;
    TERN_LOG(kInfo, kShm, -1, "no huge page for the buffer region at %p (madvise MADV_COLLAPSE: %s)",
             reinterpret_cast<void*>(r), std::strerror(err));
    if (err == EAGAIN && region.state == RegionState::kSeen) {
      region.state = RegionState::kRetry;
    } else {
      region.state = RegionState::kFailed;
      ++failed_;
    }
  }
  if (now > 0) {
    TERN_LOG(kInfo, kShm, -1, "backed %zu MiB of the buffer at %p (%zu bytes) with huge pages", now * 2, p, bytes);
  }
  return now;
}

}  // namespace tern::shm
