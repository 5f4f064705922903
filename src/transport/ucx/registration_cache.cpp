#include "transport/ucx/registration_cache.hpp"

#include <utility>

namespace tern {

RegistrationCache::RegistrationCache(size_t capacityBytes, int maxEntries, size_t pageBytes, RegisterFn reg,
                                     DeregisterFn dereg)
    : capacityBytes_(capacityBytes),
      pageBytes_(pageBytes == 0 ? 4096 : pageBytes),
      reg_(std::move(reg)),
      dereg_(std::move(dereg)),
      slots_(maxEntries > 0 ? static_cast<size_t>(maxEntries) : 0) {}

RegistrationCache::~RegistrationCache() {
  for (Slot& s : slots_) {
    if (s.live) dereg_(s.handle);
  }
}

RegistrationCache::Handle RegistrationCache::takeVictimLocked(size_t need) {
  auto drop = [&](Slot& s) {
    s.live = false;
    bytes_ -= s.end - s.base;
    return s.handle;
  };
  for (Slot& s : slots_) {
    if (s.live && s.stale && s.users == 0) return drop(s);
  }
  if (need > capacityBytes_) return nullptr;  // can never be cached: registered uncached, nothing to evict for it
  bool freeSlot = false;
  for (const Slot& s : slots_) freeSlot = freeSlot || (!s.live && !s.reserved);
  if (freeSlot && bytes_ + need <= capacityBytes_) return nullptr;
  Slot* lru = nullptr;
  for (Slot& s : slots_) {
    if (s.live && s.users == 0 && (lru == nullptr || s.lastUse < lru->lastUse)) lru = &s;
  }
  if (lru == nullptr) return nullptr;  // everything is in use: the caller goes uncached
  ++stats_.evictions;
  return drop(*lru);
}

RegistrationCache::Lease RegistrationCache::acquire(const void* addr, size_t bytes) {
  const uintptr_t first = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t last = first + (bytes == 0 ? 1 : bytes);
  const uintptr_t base = first & ~(pageBytes_ - 1);
  const uintptr_t end = (last + pageBytes_ - 1) & ~(pageBytes_ - 1);
  const size_t need = end - base;
  int slot = -1;
  for (;;) {
    Handle victim = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (size_t i = 0; i < slots_.size(); ++i) {
        Slot& s = slots_[i];
        if (s.live && !s.stale && s.base <= first && s.end >= last) {
          ++s.users;
          s.lastUse = ++tick_;
          ++stats_.hits;
          return {s.handle, static_cast<int>(i)};
        }
      }
      victim = takeVictimLocked(need);
      if (victim == nullptr) {
        ++stats_.misses;
        if (bytes_ + need <= capacityBytes_) {
          for (size_t i = 0; i < slots_.size(); ++i) {
            Slot& s = slots_[i];
            if (s.live || s.reserved) continue;
            s = Slot{};
            s.base = base;
            s.end = end;
            s.reserved = true;
            bytes_ += need;
            slot = static_cast<int>(i);
            break;
          }
        }
      }
    }
    // Deregistration may free memory and so re-enter invalidate() through the hooks: never under the mutex.
    if (victim == nullptr) break;
    dereg_(victim);
  }

  Handle handle = nullptr;
  try {
    handle = reg_(reinterpret_cast<void*>(base), need);
  } catch (...) {
    if (slot >= 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      slots_[slot].reserved = false;
      bytes_ -= need;
    }
    throw;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (slot < 0) {
    ++stats_.uncached;
    return {handle, -1};
  }
  Slot& s = slots_[slot];
  s.reserved = false;
  s.live = true;
  s.handle = handle;
  s.users = 1;
  s.lastUse = ++tick_;
  return {handle, slot};
}

void RegistrationCache::release(const Lease& lease) {
  if (lease.handle == nullptr) return;
  if (lease.slot < 0) {
    dereg_(lease.handle);
    return;
  }
  Handle drop = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Slot& s = slots_[lease.slot];
    if (s.users > 0) --s.users;
    if (s.users == 0 && s.stale && s.live) {
      s.live = false;
      bytes_ -= s.end - s.base;
      drop = s.handle;
    }
  }
  if (drop != nullptr) dereg_(drop);
}

void RegistrationCache::invalidate(const void* addr, size_t bytes) noexcept {
  const uintptr_t first = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t last = first + bytes;
  std::lock_guard<std::mutex> lock(mutex_);
  for (Slot& s : slots_) {
    if ((s.live || s.reserved) && !s.stale && s.base < last && first < s.end) {
      s.stale = true;
      ++stats_.invalidations;
    }
  }
}

RegistrationCache::Stats RegistrationCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

size_t RegistrationCache::registeredBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

int RegistrationCache::entries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int n = 0;
  for (const Slot& s : slots_) n += s.live ? 1 : 0;
  return n;
}

}  // namespace tern
