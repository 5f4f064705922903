// A bounded LRU cache of memory registrations (ucp_mem_map handles, or any other "pin this range" handle).
//
// Why cache: registering memory costs a system call and page pinning per call on RDMA-capable transports, and the
// executor sends from the same user and scratch buffers over and over. Why bounded: pinned memory is a scarce
// resource, so the cache keeps at most capacityBytes registered (and at most maxEntries registrations) and
// deregisters the least recently used idle one to make room. A registration in use by a posted transfer is never
// evicted; when every slot is busy, the caller gets an uncached registration that is dropped on release.
//
// Why invalidation: a cached registration of memory that was unmapped (free() of a large buffer) and later reused
// at the same address would point at the old pages. invalidate() is called from memory-event hooks (UCM) on any
// thread, possibly from inside munmap or malloc, so it only flips flags under a mutex: it never allocates, frees or
// calls the deregistration callback (the owner thread does that on its next acquire or release).
//
// The slots are a fixed array allocated once: a lookup scans at most maxEntries entries, which is cheap next to
// the large (>= the caller's threshold) transfers that use the cache, and keeps allocation out of every path that
// holds the mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace tern {

class RegistrationCache {
 public:
  using Handle = void*;
  // reg must return a non-null handle or throw; dereg must not throw.
  using RegisterFn = std::function<Handle(void* base, size_t bytes)>;
  using DeregisterFn = std::function<void(Handle)>;

  struct Lease {
    Handle handle = nullptr;
    int slot = -1;  // -1: uncached (deregistered on release)
  };

  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t evictions = 0;
    uint64_t invalidations = 0;
    uint64_t uncached = 0;
  };

  RegistrationCache(size_t capacityBytes, int maxEntries, size_t pageBytes, RegisterFn reg, DeregisterFn dereg);
  ~RegistrationCache();
  RegistrationCache(const RegistrationCache&) = delete;
  RegistrationCache& operator=(const RegistrationCache&) = delete;

  // A registration covering [addr, addr + bytes): cached, or registered now (page-aligned) on a miss. Owner
  // thread only. Every lease must be released before the cache is destroyed.
  Lease acquire(const void* addr, size_t bytes);
  void release(const Lease& lease);

  // Marks registrations overlapping [addr, addr + bytes) stale: no later acquire returns them, and they are
  // deregistered once idle. Any thread; never allocates.
  void invalidate(const void* addr, size_t bytes) noexcept;

  Stats stats() const;
  size_t registeredBytes() const;
  int entries() const;

 private:
  struct Slot {
    uintptr_t base = 0;
    uintptr_t end = 0;
    Handle handle = nullptr;
    uint32_t users = 0;
    uint64_t lastUse = 0;
    bool live = false;      // holds a registration
    bool reserved = false;  // being registered by acquire (outside the mutex)
    bool stale = false;
  };

  // Under mutex_: takes one idle registration to drop (stale ones first, then the least recently used when room is
  // needed for `need` more bytes); returns its handle, or null when nothing has to go.
  Handle takeVictimLocked(size_t need);

  const size_t capacityBytes_;
  const size_t pageBytes_;
  RegisterFn reg_;
  DeregisterFn dereg_;
  mutable std::mutex mutex_;
  std::vector<Slot> slots_;
  size_t bytes_ = 0;  // registered bytes held by live or reserved slots
  uint64_t tick_ = 0;
  Stats stats_;
};

}  // namespace tern
