// Host buffers for every benchmark: tern's perf binaries and the Open MPI / Gloo baseline drivers allocate the same
// way, so the libraries are compared on identical memory. Header-only and free of tern: the baselines must not
// link it.
//
// Buffers of 2 MiB and more start on a 2 MiB boundary, the granularity of the device buffers nccl-tests gets from
// cudaMalloc and what PyTorch's CPU allocator does for large tensors when it asks for transparent huge pages
// (THP_MEM_ALLOC_ENABLE=1); smaller ones on a 4 KiB page. Every byte is written once, so page faults stay out of
// the timings.
//
// Huge pages are a property of the memory, not of the library, so a fair comparison gives both sides the same kind.
// PERF_HUGEPAGES chooses it for every buffer of 2 MiB and more, in every binary that allocates through this header:
//   unset / "default"   whatever the kernel's THP policy gives plain heap memory (with THP "madvise", small pages)
//   "madvise" / "1"     madvise(MADV_HUGEPAGE) before the first touch: huge pages where the kernel can find them
//                       (THP "madvise" or "always"; with "never" the advice is ignored)
//   "none" / "0"        madvise(MADV_NOHUGEPAGE): small pages even under THP "always", and tern's own
//                       MADV_COLLAPSE (TERN_SHM_HUGEPAGES) cannot collapse them either
// With PERF_HUGEPAGES set (to any of these), each large allocation reports on stderr how much of it the kernel backed
// with huge pages (AnonHugePages in /proc/self/smaps), so a run shows what it actually measured.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <new>
#include <string>

namespace tern::perf {

constexpr size_t kLargeBufferAlignment = size_t{2} << 20;

inline size_t hostBufferAlignment(size_t bytes) {
  return bytes >= kLargeBufferAlignment ? kLargeBufferAlignment : 4096;
}

enum class HugePagePolicy { kKernelDefault, kAdvise, kRefuse };

// Whether PERF_HUGEPAGES is set at all (then every large allocation reports its huge pages, "default" included).
inline bool hugePageReport() {
  static const bool set = [] {
    const char* v = std::getenv("PERF_HUGEPAGES");
    return v != nullptr && *v != '\0';
  }();
  return set;
}

// PERF_HUGEPAGES, read once. An unknown value stops the process: a benchmark that silently measured the wrong kind
// of memory would be worse than none.
inline HugePagePolicy hugePagePolicy() {
  static const HugePagePolicy policy = [] {
    const char* v = std::getenv("PERF_HUGEPAGES");
    if (v == nullptr || *v == '\0' || std::strcmp(v, "default") == 0) return HugePagePolicy::kKernelDefault;
    if (std::strcmp(v, "madvise") == 0 || std::strcmp(v, "1") == 0) return HugePagePolicy::kAdvise;
    if (std::strcmp(v, "none") == 0 || std::strcmp(v, "0") == 0) return HugePagePolicy::kRefuse;
    std::fprintf(stderr, "host_buffer: PERF_HUGEPAGES must be default, madvise (1) or none (0), not '%s'\n", v);
    std::exit(2);
  }();
  return policy;
}

inline const char* hugePagePolicyName(HugePagePolicy p) {
  switch (p) {
    case HugePagePolicy::kAdvise:
      return "madvise";
    case HugePagePolicy::kRefuse:
      return "none";
    default:
      return "default";
  }
}

// Bytes of [p, p + bytes) the kernel backs with transparent huge pages, from the AnonHugePages lines of the mappings
// of /proc/self/smaps that overlap it (a mapping that only partly overlaps counts in proportion). -1 when smaps
// cannot be read.
inline long long anonHugePageBytes(const void* p, size_t bytes) {
  std::ifstream smaps("/proc/self/smaps");
  if (!smaps) return -1;
  const auto lo = reinterpret_cast<uintptr_t>(p);
  const uintptr_t hi = lo + bytes;
  long long total = 0;
  uintptr_t mapLo = 0, mapHi = 0;
  std::string line;
  while (std::getline(smaps, line)) {
    unsigned long a = 0, b = 0;
    long kb = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &a, &b) == 2 && line.find('-') < line.find(' ')) {
      mapLo = a;
      mapHi = b;
    } else if (std::sscanf(line.c_str(), "AnonHugePages: %ld kB", &kb) == 1 && mapHi > lo && mapLo < hi) {
      const double overlap =
          static_cast<double>(std::min(mapHi, hi) - std::max(mapLo, lo)) / static_cast<double>(mapHi - mapLo);
      total += static_cast<long long>(static_cast<double>(kb) * 1024 * overlap);
    }
  }
  return total;
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using HostBuffer = std::unique_ptr<char[], FreeDeleter>;

// At least bytes (rounded up to the alignment), zero-filled. Throws std::bad_alloc when memory runs out. The memory
// is plain aligned_alloc memory (callers may release() it and std::free it themselves).
inline HostBuffer allocateHostBuffer(size_t bytes) {
  const size_t align = hostBufferAlignment(bytes);
  const size_t rounded = (std::max<size_t>(bytes, 64) + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (p == nullptr) throw std::bad_alloc();
  const HugePagePolicy policy = hugePagePolicy();
  // Advice must come before the first touch: the page faults of the memset below are what allocates the pages.
  if (policy != HugePagePolicy::kKernelDefault && align == kLargeBufferAlignment) {
    const int advice = policy == HugePagePolicy::kAdvise ? MADV_HUGEPAGE : MADV_NOHUGEPAGE;
    if (::madvise(p, rounded, advice) != 0) {
      std::fprintf(stderr, "# host_buffer: madvise(%s) of %zu bytes failed: %s\n",
                   policy == HugePagePolicy::kAdvise ? "MADV_HUGEPAGE" : "MADV_NOHUGEPAGE", rounded,
                   std::strerror(errno));
    }
  }
  std::memset(p, 0, rounded);
  if (hugePageReport() && align == kLargeBufferAlignment) {
    const long long huge = anonHugePageBytes(p, rounded);
    std::fprintf(stderr, "# host_buffer: PERF_HUGEPAGES=%s: %lld of %zu MiB on huge pages (AnonHugePages)\n",
                 hugePagePolicyName(policy), huge < 0 ? -1 : huge >> 20, rounded >> 20);
  }
  return HostBuffer(static_cast<char*>(p));
}

}  // namespace tern::perf
