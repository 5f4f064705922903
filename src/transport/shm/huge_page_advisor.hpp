// Asks the kernel to back the user's buffers of cross-process (CMA) allreduces with transparent huge pages.
//
// Why: process_vm_readv/writev pin the peer's pages one by one before copying; with 4 KiB pages a 4 MiB allreduce
// pins 1024 of them per rank and call, and that, plus the TLB misses of the copies, is a large part of the call
// (measured: huge pages take 2 ranks at 16 MiB from 8.4 to 10.1 GB/s busbw; 4 MiB gains where the buffer covers
// whole 2 MiB regions). A library cannot choose how its caller allocates, but MADV_COLLAPSE (Linux 6.1) lets it
// turn the pages of an existing anonymous buffer into huge pages in place: the kernel copies them under its own
// locks, the contents and every program-visible property stay the same, and pages that something pins (RDMA,
// cudaHostRegister, a peer's CMA in flight) are left alone, so it cannot break what holds them.
//
// Policy: a 2 MiB-aligned region that an allreduce's buffer covers at least half of is collapsed once it has been
// in use for a while (Pacing::minAge, 1 s: a buffer that a short run or a one-off call uses is not worth the
// copy; training reuses its gradient buffers every step for hours), at most once per region, and never more than
// a small share of the time (Pacing::maxShare, 5%: after a collapse that took d, the next waits 19 d). Collapsing
// runs inside the call that uses the buffer, before peers may touch it, so it is paced rather than done at
// once: a collapse costs a 2 MiB copy plus the page-table and TLB work of replacing 512 mappings, which on a
// virtual machine with peers reading the same memory was measured far above the copy itself, and done all at
// once on the second use it made a short nccl-tests style run of 4-16 MiB several times slower than a long one.
// A region is retried once after a transient failure (EAGAIN), never after others. The kernel decides the rest
// (THP "never" or MADV_NOHUGEPAGE memory is refused). Up to 1 MiB of untouched pages a region may populate past
// either end of the buffer. TERN_SHM_HUGEPAGES=0 turns it off.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace tern::shm {

class HugePageAdvisor {
 public:
  static constexpr size_t kRegionBytes = size_t{2} << 20;  // x86-64 and arm64 (4 KiB base pages) PMD size

  struct Pacing {
    std::chrono::nanoseconds minAge = std::chrono::seconds(1);  // in use at least this long before a collapse
    double maxShare = 0.05;  // of the time from one collapse to the next that collapsing may take (0 < x <= 1)
  };

  explicit HugePageAdvisor(bool enabled) : HugePageAdvisor(enabled, Pacing{}) {}
  HugePageAdvisor(bool enabled, Pacing pacing);
  // Whether TERN_SHM_HUGEPAGES allows collapsing (default yes).
  static bool enabledByEnvironment();

  // The start addresses of the regions that a buffer of bytes at p covers at least half of.
  static std::vector<uintptr_t> regionsOf(const void* p, size_t bytes);

  // Called with every buffer that peers will read or write by CMA, before they may touch it. Returns how many
  // regions it collapsed now (the regions it first meets are remembered, old enough ones collapsed as the pacing
  // allows).
  size_t onBuffer(const void* p, size_t bytes);

  size_t collapsed() const { return collapsed_; }
  size_t failed() const { return failed_; }

 private:
  using Clock = std::chrono::steady_clock;
  enum class RegionState : uint8_t { kSeen, kRetry, kCollapsed, kFailed };
  struct Region {
    RegionState state = RegionState::kSeen;
    Clock::time_point firstSeen;
  };
  // Bounds the bookkeeping (2^16 regions = 128 GiB of buffers); regions beyond it are left as they are.
  static constexpr size_t kMaxRegions = size_t{1} << 16;

  bool enabled_;
  Pacing pacing_;
  Clock::time_point nextCollapse_{};  // the pacing: no collapse before this
  std::unordered_map<uintptr_t, Region> regions_;
  size_t collapsed_ = 0;
  size_t failed_ = 0;
};

}  // namespace tern::shm
