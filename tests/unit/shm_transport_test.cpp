// The shared-memory FIFO transport (src/transport/shm/shm_transport.*) through the point-to-point API, with ranks
// as threads over TCP loopback (same host id, so same-host peers are served by shared memory): ordering of many
// messages of mixed sizes in both directions at once (eager through the ring, multi-slot, and rendezvous), zero-byte
// messages, size mismatches reported as errors, and the registered-buffer allocator.
#include "transport/shm/shm_transport.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "rank_threads.hpp"
#include "tern/tern_ext.h"
#include "transport/shm/buffer_registry.hpp"
#include "transport/shm/shm_layout.hpp"

namespace tern {
namespace {

using testing::runOnRanks;
using testing::Wire;

uint8_t byteOf(int from, int to, size_t msg, size_t i) {
  return static_cast<uint8_t>(from * 131 + to * 71 + msg * 29 + i * 7 + (i >> 11));
}

// Sizes straddling a ring slot, a multi-slot message, a message longer than a whole ring, and rendezvous sizes.
const std::vector<size_t> kSizes = {0,
                                    1,
                                    100,
                                    shm::kRingSlotBytes - sizeof(shm::SlotHeader) - 1,
                                    shm::kRingSlotBytes - sizeof(shm::SlotHeader),
                                    shm::kRingSlotBytes - sizeof(shm::SlotHeader) + 1,
                                    200 * 1000,
                                    shm::ShmTransport::kRendezvousBytes - 1,
                                    shm::ShmTransport::kRendezvousBytes,
                                    3 * 1000 * 1000 + 17,
                                    0,
                                    7};

// Every rank sends every size, in order, to every other rank, and receives the same from every other rank, all in
// one group (so sends and receives with one peer are in flight together in both directions).
void exchangeAll(ternComm_t comm, int r, int n) {
  std::vector<std::vector<std::vector<uint8_t>>> sends(n), recvs(n);
  for (int p = 0; p < n; ++p) {
    if (p == r) continue;
    for (size_t m = 0; m < kSizes.size(); ++m) {
      std::vector<uint8_t> s(kSizes[m]);
      for (size_t i = 0; i < s.size(); ++i) s[i] = byteOf(r, p, m, i);
      sends[p].push_back(std::move(s));
      recvs[p].emplace_back(kSizes[m], 0xee);
    }
  }
  ASSERT_EQ(ternGroupStart(), ternSuccess);
  for (int p = 0; p < n; ++p) {
    if (p == r) continue;
    for (size_t m = 0; m < kSizes.size(); ++m) {
      ternSend(sends[p][m].data(), kSizes[m], ternUint8, p, comm);
      ternRecv(recvs[p][m].data(), kSizes[m], ternUint8, p, comm);
    }
  }
  ASSERT_EQ(ternGroupEnd(), ternSuccess) << ternGetLastError(comm);
  for (int p = 0; p < n; ++p) {
    if (p == r) continue;
    for (size_t m = 0; m < kSizes.size(); ++m) {
      const std::vector<uint8_t>& got = recvs[p][m];
      size_t bad = got.size();
      for (size_t i = 0; i < got.size() && bad == got.size(); ++i) {
        if (got[i] != byteOf(p, r, m, i)) bad = i;
      }
      EXPECT_EQ(bad, got.size()) << "rank " << r << ": message " << m << " (" << kSizes[m] << " bytes) from rank " << p
                                 << " wrong at byte " << bad;
    }
  }
}

// Restores rendezvous after tests that turn it off.
class ShmTransportTest : public ::testing::Test {
 protected:
  void TearDown() override { shm::ShmTransport::setRendezvousForTesting(true); }
};

TEST_F(ShmTransportTest, OrderedMixedSizesBothDirections) {
  for (bool rendezvous : {true, false}) {
    shm::ShmTransport::setRendezvousForTesting(rendezvous);
    for (int n : {2, 3}) {
      runOnRanks(n, Wire::kTcp, [&](ternComm_t comm, int r) {
        ASSERT_STREQ(ternCommTransportName(comm), "shm+tcp");
        for (int round = 0; round < 2; ++round) exchangeAll(comm, r, n);
      });
    }
  }
}

// Separate calls (not a group), rendezvous off: a blocking send of a message many times the ring's size completes
// while the receiver drains the ring.
TEST_F(ShmTransportTest, BlockingSendRecvLongerThanTheRing) {
  shm::ShmTransport::setRendezvousForTesting(false);
  const size_t bytes = 5 * 1000 * 1000 + 3;
  runOnRanks(2, Wire::kTcp, [&](ternComm_t comm, int r) {
    std::vector<uint8_t> buf(bytes);
    if (r == 0) {
      for (size_t i = 0; i < bytes; ++i) buf[i] = byteOf(0, 1, 0, i);
      for (int k = 0; k < 3; ++k) ASSERT_EQ(ternSend(buf.data(), bytes, ternUint8, 1, comm), ternSuccess);
    } else {
      for (int k = 0; k < 3; ++k) {
        std::fill(buf.begin(), buf.end(), 0);
        ASSERT_EQ(ternRecv(buf.data(), bytes, ternUint8, 0, comm), ternSuccess) << ternGetLastError(comm);
        for (size_t i = 0; i < bytes; i += 4093) ASSERT_EQ(buf[i], byteOf(0, 1, 0, i)) << i;
      }
    }
  });
}

TEST_F(ShmTransportTest, SizeMismatchIsAnError) {
  ternConfig_t config = TERN_CONFIG_INITIALIZER;
  config.timeoutMs = 5000;
  runOnRanks(
      2, Wire::kTcp,
      [&](ternComm_t comm, int r) {
        std::vector<char> buf(300);
        if (r == 0) {
          EXPECT_EQ(ternSend(buf.data(), 100, ternUint8, 1, comm), ternSuccess);
        } else {
          EXPECT_EQ(ternRecv(buf.data(), 200, ternUint8, 0, comm), ternInvalidUsage);
          EXPECT_NE(std::string(ternGetLastError(comm)).find("100 bytes from rank 0"), std::string::npos)
              << ternGetLastError(comm);
        }
      },
      &config);
}

// Mappings of this process's tern segments, as /proc/self/maps lists them: the start address of every mapping of
// each segment (by name) from its first byte.
std::map<std::string, std::set<uintptr_t>> segmentMappings() {
  std::map<std::string, std::set<uintptr_t>> found;
  const std::string mine = "-p" + std::to_string(::getpid()) + "-";
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t at = line.find("/dev/shm/tern-");
    if (at == std::string::npos || line.find(mine, at) == std::string::npos) continue;
    // "start-end perms offset dev inode path": only the mapping that begins at the file's start counts.
    std::istringstream fields(line);
    std::string range, perms, offset;
    fields >> range >> perms >> offset;
    if (std::stoull(offset, nullptr, 16) != 0) continue;
    std::string name = line.substr(at);
    name = name.substr(0, name.find(' '));  // without " (deleted)": the names are unlinked once set up
    found[name].insert(std::stoull(range, nullptr, 16));
  }
  return found;
}

// Ranks that are threads of one process share one mapping of each segment (the creator's), rather than mapping
// every peer's at an address of their own: one physical flag at one address is what lets ThreadSanitizer see the
// release/acquire of a call (and costs fewer page tables). The exchange afterwards runs over those shared mappings.
TEST_F(ShmTransportTest, ThreadRanksMapEachSegmentOnce) {
  const int n = 3;
  std::map<std::string, std::set<uintptr_t>> seen;
  runOnRanks(n, Wire::kTcp, [&](ternComm_t comm, int r) {
    ASSERT_STREQ(ternCommTransportName(comm), "shm+tcp");
    ASSERT_EQ(ternBarrier(comm), ternSuccess) << ternGetLastError(comm);  // every rank has set up
    if (r == 0) seen = segmentMappings();
    ASSERT_EQ(ternBarrier(comm), ternSuccess) << ternGetLastError(comm);  // none tears down before rank 0 looked
    exchangeAll(comm, r, n);
  });
  EXPECT_EQ(seen.size(), static_cast<size_t>(n)) << "one segment per rank";
  for (const auto& [name, starts] : seen) EXPECT_EQ(starts.size(), 1u) << name << " is mapped more than once";
  EXPECT_TRUE(segmentMappings().empty()) << "a segment stays mapped after every communicator is destroyed";
}

TEST(ShmRegistry, AllocDescribeMapFree) {
  void* p = nullptr;
  ASSERT_EQ(ternMemAlloc(&p, 10000), ternSuccess);
  ASSERT_NE(p, nullptr);
  std::memset(p, 7, 10000);
  shm::BufferRef ref;
  shm::describeBuffer(static_cast<char*>(p) + 100, 500, &ref);
  EXPECT_NE(ref.segId, 0u);
  EXPECT_EQ(ref.offset, 100u);
  EXPECT_GE(ref.segBytes, 10000u);
  // Past the end of the allocation, and ordinary memory: not registered.
  shm::BufferRef outside;
  shm::describeBuffer(static_cast<char*>(p) + 100, ref.segBytes, &outside);
  EXPECT_EQ(outside.segId, 0u);
  std::vector<char> heap(100);
  shm::describeBuffer(heap.data(), heap.size(), &outside);
  EXPECT_EQ(outside.segId, 0u);
  {
    // Mapped as a peer process would map it (through /proc/self/fd, with the inode check); this process maps the
    // file already, so the peer's view is that very mapping (one address per file per process, mapped_file.hpp).
    shm::PeerMappings mappings(4);
    char* q = mappings.resolve(getpid(), 42, ref, 500);
    ASSERT_NE(q, nullptr) << std::strerror(errno);
    EXPECT_EQ(q, static_cast<char*>(p) + 100);
    EXPECT_EQ(q[0], 7);
    q[1] = 9;
    EXPECT_EQ(static_cast<char*>(p)[101], 9);
    EXPECT_EQ(mappings.resolve(getpid(), 42, ref, 500), q);  // cached
    // A reused fd number with another inode is refused.
    shm::BufferRef stale = ref;
    stale.segId += 1000;
    stale.ino += 1;
    EXPECT_EQ(mappings.resolve(getpid(), 42, stale, 500), nullptr);
  }
  EXPECT_EQ(ternMemFree(p), ternSuccess);
  EXPECT_EQ(ternMemFree(nullptr), ternSuccess);
}

}  // namespace
}  // namespace tern
