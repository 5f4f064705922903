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
// Policy: a 2 MiB-aligned region is collapsed the second time an allreduce's buffer covers at least half of it
// (a buffer used once is not worth the copy; training reuses its gradient buffers every step), at most once per
// region. A region is retried once after a transient failure (EAGAIN), never after others. The kernel decides
// the rest (THP "never" or MADV_NOHUGEPAGE memory is refused). The cost is one 2 MiB copy per region, once (plus
// compaction when free memory is fragmented), and up to 1 MiB of untouched pages a region may populate past
// either end of the buffer. TERN_SHM_HUGEPAGES=0 turns it off.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace tern::shm {

class HugePageAdvisor {
 public:
  static constexpr size_t kRegionBytes = size_t{2} << 20;  // x86-64 and arm64 (4 KiB base pages) PMD size

  explicit HugePageAdvisor(bool enabled);
  // Whether TERN_SHM_HUGEPAGES allows collapsing (default yes).
  static bool enabledByEnvironment();

  // The start addresses of the regions that a buffer of bytes at p covers at least half of.
  static std::vector<uintptr_t> regionsOf(const void* p, size_t bytes);

  // Called with every buffer that peers will read or write by CMA, before they may touch it. Returns how many
  // regions it collapsed now.
  size_t onBuffer(const void* p, size_t bytes);

  size_t collapsed() const { return collapsed_; }
  size_t failed() const { return failed_; }

 private:
  enum class RegionState : uint8_t { kSeenOnce, kRetry, kCollapsed, kFailed };
  // Bounds the bookkeeping (2^16 regions = 128 GiB of buffers); regions beyond it are left as they are.
  static constexpr size_t kMaxRegions = size_t{1} << 16;

  bool enabled_;
  std::unordered_map<uintptr_t, RegionState> regions_;
  size_t collapsed_ = 0;
  size_t failed_ = 0;
};

}  // namespace tern::shm
