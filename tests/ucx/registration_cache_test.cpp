// The bounded LRU registration cache (src/transport/ucx/registration_cache.*) with fake register/deregister
// callbacks: hits on covered sub-ranges, page alignment, the byte bound and LRU eviction, in-use entries never
// evicted (uncached leases instead), invalidation of unmapped ranges, and deregistration of everything at the end.
#include "transport/ucx/registration_cache.hpp"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <vector>

namespace tern {
namespace {

constexpr size_t kPage = 4096;

// Records what the cache registered; handles are distinct fake pointers.
struct FakeRegistrar {
  struct Region {
    uintptr_t base;
    size_t bytes;
  };
  std::map<uintptr_t, Region> live;  // handle -> region
  uintptr_t nextHandle = 0x1000;
  int registrations = 0;
  int deregistrations = 0;

  std::unique_ptr<RegistrationCache> makeCache(size_t capacity, int entries) {
    return std::make_unique<RegistrationCache>(
        capacity, entries, kPage,
        [this](void* base, size_t bytes) {
          ++registrations;
          uintptr_t h = nextHandle++;
          live[h] = {reinterpret_cast<uintptr_t>(base), bytes};
          return reinterpret_cast<RegistrationCache::Handle>(h);
        },
        [this](RegistrationCache::Handle h) {
          ++deregistrations;
          EXPECT_EQ(live.erase(reinterpret_cast<uintptr_t>(h)), 1u) << "deregistered an unknown handle";
        });
  }
  const Region& region(RegistrationCache::Handle h) { return live.at(reinterpret_cast<uintptr_t>(h)); }
  // Whether the registration behind a lease, as this registrar recorded it, covers [addr, addr + bytes).
  bool covers(const RegistrationCache::Lease& l, uintptr_t addr, size_t bytes) {
    auto it = live.find(reinterpret_cast<uintptr_t>(l.handle));
    return it != live.end() && it->second.base <= addr && addr + bytes <= it->second.base + it->second.bytes;
  }
};

// Fake addresses: the cache never dereferences them.
const void* at(uintptr_t a) { return reinterpret_cast<const void*>(a); }

TEST(RegistrationCache, RegistersPageAlignedAndHitsCoveredRanges) {
  FakeRegistrar r;
  auto cache = r.makeCache(1 << 30, 16);
  auto a = cache->acquire(at(0x100010), 3 * kPage);
  ASSERT_NE(a.handle, nullptr);
  EXPECT_GE(a.slot, 0);
  EXPECT_EQ(r.region(a.handle).base, 0x100000u);
  EXPECT_EQ(r.region(a.handle).bytes, 4 * kPage);  // 0x100010 + 3 pages crosses into a fourth page
  cache->release(a);
  auto b = cache->acquire(at(0x100000 + kPage), kPage);  // inside the first registration
  EXPECT_EQ(b.handle, a.handle);
  EXPECT_TRUE(r.covers(b, 0x100000 + kPage, kPage));
  cache->release(b);
  EXPECT_EQ(r.registrations, 1);
  EXPECT_EQ(cache->stats().hits, 1u);
  EXPECT_EQ(cache->stats().misses, 1u);
  auto c = cache->acquire(at(0x100000 + 3 * kPage), 2 * kPage);  // runs past the end: a new registration
  EXPECT_NE(c.handle, a.handle);
  EXPECT_TRUE(r.covers(c, 0x100000 + 3 * kPage, 2 * kPage));
  cache->release(c);
  EXPECT_EQ(r.registrations, 2);
  cache.reset();
  EXPECT_EQ(r.deregistrations, 2);
  EXPECT_TRUE(r.live.empty());
}

TEST(RegistrationCache, EvictsLeastRecentlyUsedToStayWithinBytes) {
  FakeRegistrar r;
  auto cache = r.makeCache(3 * kPage, 16);
  std::vector<RegistrationCache::Handle> h;
  for (uintptr_t i = 0; i < 3; ++i) {
    auto l = cache->acquire(at(0x200000 + i * 0x10000), kPage);
    h.push_back(l.handle);
    cache->release(l);
  }
  EXPECT_EQ(cache->registeredBytes(), 3 * kPage);
  // Touch the first so the second is the least recently used.
  cache->release(cache->acquire(at(0x200000), kPage));
  auto d = cache->acquire(at(0x300000), kPage);
  cache->release(d);
  EXPECT_EQ(cache->stats().evictions, 1u);
  EXPECT_EQ(r.live.count(reinterpret_cast<uintptr_t>(h[1])), 0u) << "the LRU entry should have gone";
  EXPECT_EQ(r.live.count(reinterpret_cast<uintptr_t>(h[0])), 1u);
  EXPECT_EQ(r.live.count(reinterpret_cast<uintptr_t>(h[2])), 1u);
  EXPECT_LE(cache->registeredBytes(), 3 * kPage);
}

TEST(RegistrationCache, EntryBoundEvictsToo) {
  FakeRegistrar r;
  auto cache = r.makeCache(1 << 30, 2);
  for (uintptr_t i = 0; i < 5; ++i) cache->release(cache->acquire(at(0x400000 + i * 0x10000), kPage));
  EXPECT_EQ(cache->entries(), 2);
  EXPECT_EQ(r.live.size(), 2u);
  EXPECT_EQ(cache->stats().evictions, 3u);
}

TEST(RegistrationCache, InUseEntriesAreNeverEvicted) {
  FakeRegistrar r;
  auto cache = r.makeCache(2 * kPage, 16);
  auto a = cache->acquire(at(0x500000), 2 * kPage);  // fills the cache and stays in use
  auto b = cache->acquire(at(0x600000), kPage);      // no room, nothing idle: uncached
  EXPECT_EQ(b.slot, -1);
  EXPECT_EQ(cache->stats().uncached, 1u);
  EXPECT_EQ(r.live.count(reinterpret_cast<uintptr_t>(a.handle)), 1u);
  cache->release(b);  // uncached: deregistered at once
  EXPECT_EQ(r.live.count(reinterpret_cast<uintptr_t>(b.handle)), 0u);
  cache->release(a);
  auto c = cache->acquire(at(0x600000), kPage);  // now a can go
  EXPECT_GE(c.slot, 0);
  EXPECT_EQ(r.live.count(reinterpret_cast<uintptr_t>(a.handle)), 0u);
  cache->release(c);
}

TEST(RegistrationCache, LargerThanCapacityIsUncached) {
  FakeRegistrar r;
  auto cache = r.makeCache(4 * kPage, 16);
  auto big = cache->acquire(at(0x700000), 8 * kPage);
  EXPECT_EQ(big.slot, -1);
  cache->release(big);
  EXPECT_TRUE(r.live.empty());
}

TEST(RegistrationCache, InvalidatedIdleEntryIsDroppedAndReregistered) {
  FakeRegistrar r;
  auto cache = r.makeCache(1 << 30, 16);
  auto a = cache->acquire(at(0x800000), 4 * kPage);
  cache->release(a);
  cache->invalidate(at(0x800000 + kPage), 1);  // any overlap makes it stale
  EXPECT_EQ(cache->stats().invalidations, 1u);
  auto b = cache->acquire(at(0x800000), 4 * kPage);
  EXPECT_NE(b.handle, a.handle) << "a stale registration must never be handed out";
  EXPECT_EQ(r.live.count(reinterpret_cast<uintptr_t>(a.handle)), 0u) << "the stale one is deregistered";
  cache->release(b);
  cache->invalidate(at(0x900000), kPage);  // no overlap: nothing happens
  EXPECT_EQ(cache->stats().invalidations, 1u);
}

TEST(RegistrationCache, InvalidatedInUseEntryGoesOnRelease) {
  FakeRegistrar r;
  auto cache = r.makeCache(1 << 30, 16);
  auto a = cache->acquire(at(0xa00000), kPage);
  cache->invalidate(at(0xa00000), kPage);
  EXPECT_EQ(r.live.count(reinterpret_cast<uintptr_t>(a.handle)), 1u) << "still in use: kept until released";
  auto b = cache->acquire(at(0xa00000), kPage);
  EXPECT_NE(b.handle, a.handle);
  cache->release(a);
  EXPECT_EQ(r.live.count(reinterpret_cast<uintptr_t>(a.handle)), 0u);
  cache->release(b);
}

TEST(RegistrationCache, SharedEntryCountsUsers) {
  FakeRegistrar r;
  auto cache = r.makeCache(kPage, 16);
  auto a = cache->acquire(at(0xb00000), kPage);
  auto b = cache->acquire(at(0xb00000), kPage);
  EXPECT_EQ(a.handle, b.handle);
  cache->release(a);
  auto c = cache->acquire(at(0xc00000), kPage);  // b still holds the only slot's bytes: uncached
  EXPECT_EQ(c.slot, -1);
  cache->release(c);
  cache->release(b);
  EXPECT_EQ(r.registrations, 2);
}

// Random overlapping requests, some held while others come, and random invalidations, through a small cache:
// every lease covers what was asked for (as the registrar recorded it, page-aligned), no lease is a registration
// that an invalidation touched (tracked here from the registrar's own records), the bounds hold, and nothing leaks.
TEST(RegistrationCache, EveryLeaseCoversItsRequest) {
  FakeRegistrar r;
  const size_t kCapacity = 16 * kPage;
  auto cache = r.makeCache(kCapacity, 6);
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  std::vector<RegistrationCache::Lease> held;
  std::set<uintptr_t> stale;  // handles of registrations an invalidation overlapped
  for (int i = 0; i < 2000; ++i) {
    if (i % 50 == 49) {
      uintptr_t addr = 0x1000000 + next() % (64 * kPage);
      size_t bytes = 1 + next() % (2 * kPage);
      for (const auto& [handle, region] : r.live) {
        if (region.base < addr + bytes && addr < region.base + region.bytes) stale.insert(handle);
      }
      cache->invalidate(at(addr), bytes);
    }
    uintptr_t addr = 0x1000000 + next() % (64 * kPage);
    size_t bytes = 1 + next() % (5 * kPage);
    auto l = cache->acquire(at(addr), bytes);
    ASSERT_TRUE(r.covers(l, addr, bytes)) << "request " << i << ": " << bytes << " bytes at 0x" << std::hex << addr;
    EXPECT_EQ(stale.count(reinterpret_cast<uintptr_t>(l.handle)), 0u) << "request " << i << " got a stale registration";
    const auto& reg = r.region(l.handle);
    EXPECT_EQ(reg.base % kPage, 0u);
    EXPECT_EQ(reg.bytes % kPage, 0u);
    held.push_back(l);
    if (held.size() > 3 || next() % 2 == 0) {
      size_t k = next() % held.size();
      cache->release(held[k]);
      held.erase(held.begin() + static_cast<ptrdiff_t>(k));
    }
    EXPECT_LE(cache->entries(), 6);
  }
  for (auto& l : held) cache->release(l);
  EXPECT_LE(cache->registeredBytes(), kCapacity);
  auto st = cache->stats();
  EXPECT_EQ(st.hits + st.misses, 2000u) << "every acquire is a hit or a miss (uncached ones are misses too)";
  EXPECT_GT(st.hits, 0u);
  EXPECT_GT(st.evictions, 0u);
  EXPECT_GT(st.invalidations, 0u);
  cache.reset();
  EXPECT_TRUE(r.live.empty()) << r.live.size() << " registration(s) never deregistered";
  EXPECT_EQ(r.registrations, r.deregistrations);
}

TEST(RegistrationCache, FailedRegistrationFreesItsReservation) {
  bool failNext = true;
  int regs = 0;
  RegistrationCache cache(
      2 * kPage, 4, kPage,
      [&](void*, size_t) -> RegistrationCache::Handle {
        if (failNext) {
          failNext = false;
          throw std::runtime_error("cannot pin");
        }
        return reinterpret_cast<RegistrationCache::Handle>(static_cast<uintptr_t>(++regs));
      },
      [](RegistrationCache::Handle) {});
  EXPECT_THROW(cache.acquire(at(0xd00000), 2 * kPage), std::runtime_error);
  EXPECT_EQ(cache.registeredBytes(), 0u);
  auto l = cache.acquire(at(0xd00000), 2 * kPage);
  EXPECT_GE(l.slot, 0);
  cache.release(l);
}

}  // namespace
}  // namespace tern
