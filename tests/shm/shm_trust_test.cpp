// Shared memory is input from another process: what a peer writes into its segment (ring slot headers, buffer
// descriptors) or sends during setup must be checked before use. These tests corrupt it for real - a rank writes a
// forged slot header straight into its mapped segment, a descriptor claims more than the file holds - and expect
// an error naming the peer instead of an out-of-bounds copy (which ASan builds would report) or a SIGBUS.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "tern/tern.h"
#include "transport/shm/buffer_registry.hpp"
#include "transport/shm/intra_node_setup.hpp"
#include "transport/shm/process_identity.hpp"
#include "transport/shm/shm_layout.hpp"
#include "transport/shm/shm_wire.hpp"

namespace tern {
namespace {

using shm::SlotHeader;
using shm::SlotKind;

// Base address, in this process, of a mapping of rank `rank`'s segment of the newest communicator (names end in a
// per-process counter), found through /proc/self/maps: a test owns no handle on the library's segments.
char* findSegment(int rank) {
  std::ifstream maps("/proc/self/maps");
  const std::string tag = "-r" + std::to_string(rank) + "-p" + std::to_string(::getpid()) + "-";
  std::string line;
  char* best = nullptr;
  long bestCounter = -1;
  while (std::getline(maps, line)) {
    size_t at = line.find("/dev/shm/tern-");
    if (at == std::string::npos) continue;
    size_t t = line.find(tag, at);
    if (t == std::string::npos) continue;
    long counter = std::strtol(line.c_str() + t + tag.size(), nullptr, 10);
    if (counter > bestCounter) {
      bestCounter = counter;
      best = reinterpret_cast<char*>(std::strtoull(line.c_str(), nullptr, 16));
    }
  }
  return best;
}

// Writes h into the next slot of the ring from rank `from` to rank `to` of a 2-rank communicator and publishes it,
// as a producer would.
void forgeSlot(char* producerSegment, int to, const SlotHeader& h) {
  const shm::Layout layout = shm::Layout::forRanks(2);
  auto* ring = reinterpret_cast<shm::RingHeader*>(producerSegment + layout.ringsOffset +
                                                  static_cast<size_t>(to) * layout.ringBytes);
  char* slots = reinterpret_cast<char*>(ring) + sizeof(shm::RingHeader);
  // Each slot holds 1 + the index it was last filled for: the highest of them is the count the producer filled.
  uint64_t head = 0;
  for (uint32_t i = 0; i < layout.ringSlots; ++i) {
    head = std::max(head, std::atomic_ref<uint64_t>(reinterpret_cast<SlotHeader*>(slots + i * shm::kRingSlotBytes)->seq)
                              .load(std::memory_order_acquire));
  }
  char* slot = slots + (head % layout.ringSlots) * shm::kRingSlotBytes;
  SlotHeader forged = h;
  forged.seq = 0;
  std::memcpy(slot, &forged, sizeof(forged));
  std::memset(slot + sizeof(SlotHeader), 0x5a, shm::kRingSlotBytes - sizeof(SlotHeader));
  std::atomic_ref<uint64_t>(reinterpret_cast<SlotHeader*>(slot)->seq).store(head + 1, std::memory_order_release);
}

struct Corruption {
  const char* name;
  SlotHeader header;
};

constexpr size_t kRecvBytes = 64;
constexpr size_t kSlotPayload = shm::kRingSlotBytes - sizeof(SlotHeader);

std::vector<Corruption> corruptions() {
  return {
      {"bytes beyond the slot", {SlotKind::kFirst, 1u << 20, kRecvBytes, 0, 0, 0}},
      {"bytes within the slot, beyond the receive",
       {SlotKind::kFirst, static_cast<uint32_t>(kSlotPayload), kRecvBytes, 0, 0, 0}},
      {"bytes short of the message", {SlotKind::kFirst, 32, kRecvBytes, 0, 0, 0}},
      {"unknown kind", {static_cast<SlotKind>(77), static_cast<uint32_t>(kRecvBytes), kRecvBytes, 0, 0, 0}},
      {"continuation first", {SlotKind::kMore, static_cast<uint32_t>(kRecvBytes), kRecvBytes, 0, 0, 0}},
      {"rendezvous with payload", {SlotKind::kRendezvous, 100, kRecvBytes, 0, 0, 0}},
  };
}

class ForgedSlot : public ::testing::TestWithParam<int> {};

TEST_P(ForgedSlot, IsAnErrorNamingThePeer) {
  const Corruption c = corruptions()[GetParam()];
  ternConfig_t config = TERN_CONFIG_INITIALIZER;
  config.timeoutMs = 5000;
  ternUniqueId id;
  ASSERT_EQ(ternGetUniqueId(&id), ternSuccess);
  std::atomic<int> stage{0};  // 1: rank 1 forged the slot; 2: rank 0 has its answer
  ternResult_t result = ternSuccess;
  std::string message;
  // A guard past the receive buffer: an unchecked copy would overwrite it (and ASan would report the overflow).
  std::vector<uint8_t> buffer(kRecvBytes + 4096, 0x11);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      ternComm_t comm = nullptr;
      if (ternCommInitRankConfig(&comm, 2, id, r, &config) != ternSuccess) {
        ADD_FAILURE() << "rank " << r << " init failed: " << ternGetLastError(nullptr);
        stage.store(2);
        return;
      }
      if (r == 1) {
        char* mine = findSegment(1);
        if (mine == nullptr) {
          ADD_FAILURE() << "rank 1's segment is not mapped (no shared memory between the ranks?)";
        } else {
          forgeSlot(mine, 0, c.header);
        }
        stage.store(1);
        while (stage.load() != 2) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      } else {
        while (stage.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        result = ternRecv(buffer.data(), kRecvBytes, ternUint8, 1, comm);
        message = ternGetLastError(comm);
        stage.store(2);
      }
      ternCommAbort(comm);
    });
  }
  for (auto& t : ranks) t.join();
  EXPECT_TRUE(result == ternInternalError || result == ternRemoteError) << c.name << ": " << result << " " << message;
  EXPECT_NE(message.find("rank 1"), std::string::npos) << message;
  for (size_t i = kRecvBytes; i < buffer.size(); ++i) {
    ASSERT_EQ(buffer[i], 0x11) << c.name << ": byte " << i << " past the receive buffer was written";
  }
}

INSTANTIATE_TEST_SUITE_P(Shm, ForgedSlot, ::testing::Range(0, static_cast<int>(corruptions().size())),
                         [](const ::testing::TestParamInfo<int>& info) {
                           std::string n = corruptions()[info.param].name;
                           for (char& ch : n) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

// A registered buffer of this process, described as a peer would describe it; PeerMappings then maps it through
// /proc/self/fd like a peer process would.
struct Registered {
  void* p = nullptr;
  shm::BufferRef ref;
  explicit Registered(size_t bytes) {
    p = shmAlloc(bytes);
    shm::describeBuffer(p, bytes, &ref);
  }
  ~Registered() { shmFree(p); }
};

TEST(ShmRegistryTrust, ClaimedSizeBeyondTheFileIsRefused) {
  Registered buf(64 * 1024);
  ASSERT_NE(buf.ref.segId, 0u) << "no memfd: registered buffers unavailable here";
  const uint64_t token = shm::processIdentity().token;
  shm::PeerMappings mappings(4);
  shm::BufferRef lie = buf.ref;
  lie.segBytes = 64ull << 20;  // the mapping would run past the file: any access there is SIGBUS
  errno = 0;
  EXPECT_EQ(mappings.resolve(::getpid(), token, lie, 32ull << 20), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // The honest descriptor maps; a later lie about the same segment is measured against the real mapping.
  char* ok = mappings.resolve(::getpid(), token, buf.ref, 4096);
  ASSERT_NE(ok, nullptr);
  ok[4095] = 1;
  lie.offset = 60 * 1024;
  EXPECT_EQ(mappings.resolve(::getpid(), token, lie, 8192), nullptr);
}

TEST(ShmRegistryTrust, OffsetThatWrapsIsRefused) {
  Registered buf(16 * 1024);
  ASSERT_NE(buf.ref.segId, 0u);
  shm::PeerMappings mappings(4);
  shm::BufferRef lie = buf.ref;
  lie.mode = shm::BufferMode::kDirect;
  lie.offset = UINT64_MAX - 1000;  // offset + bytes wraps to a small number
  EXPECT_EQ(mappings.resolve(::getpid(), shm::processIdentity().token, lie, 4096), nullptr);
  EXPECT_THROW(shm::wire::checkBufferRef(lie, 4096, 0, 1), Error);
}

TEST(ShmRegistryTrust, UnsealedFileIsRefused) {
  // A file whose size its owner can still change: mapping it could SIGBUS later, so peers do not.
  int fd = static_cast<int>(::memfd_create("tern-test-unsealed", MFD_CLOEXEC));
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 4096), 0);
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  errno = 0;
  EXPECT_EQ(shm::openPeerFd(::getpid(), fd, st.st_ino), -1);
  EXPECT_EQ(errno, EPERM);
  ::close(fd);
}

TEST(ShmWireTrust, DescriptorChecks) {
  shm::BufferRef r;
  r.mode = static_cast<shm::BufferMode>(9);
  try {
    shm::wire::checkBufferRef(r, 16, 0, 3);
    ADD_FAILURE() << "unknown mode accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ternInternalError);
    EXPECT_NE(std::string(e.what()).find("rank 3"), std::string::npos) << e.what();
  }
  r.mode = shm::BufferMode::kDirect;
  r.segId = 1;
  r.fd = 5;
  r.segBytes = 8192;
  r.offset = 4096;
  EXPECT_NO_THROW(shm::wire::checkBufferRef(r, 4096, 0, 3));
  EXPECT_THROW(shm::wire::checkBufferRef(r, 4097, 0, 3), Error);
}

TEST(ShmWireTrust, AlltoallBlockMustLieInTheRegisteredInput) {
  shm::BufferRef r;
  r.mode = shm::BufferMode::kDirect;
  r.segId = 1;
  r.fd = 5;
  r.segBytes = 8192;
  r.offset = 4096;
  r.addr = 0x10000;
  EXPECT_EQ(shm::wire::checkBlockInBuffer(r, 0x10000 + 1024, 3072, 0, 3), 1024u);
  EXPECT_THROW(shm::wire::checkBlockInBuffer(r, 0x10000 + 1024, 3073, 0, 3), Error);    // past the buffer's end
  EXPECT_THROW(shm::wire::checkBlockInBuffer(r, 0x10000 - 1, 16, 0, 3), Error);         // before its start
  EXPECT_THROW(shm::wire::checkBlockInBuffer(r, 0x10000 + 16, SIZE_MAX, 0, 3), Error);  // a size that wraps
  // Not a registered segment: accepting it would read this rank's own memory at the peer's address.
  shm::BufferRef plain = r;
  plain.segId = 0;
  EXPECT_THROW(shm::wire::checkBlockInBuffer(plain, 0x10000, 16, 0, 3), Error);
  plain = r;
  plain.mode = shm::BufferMode::kStaged;
  EXPECT_THROW(shm::wire::checkBlockInBuffer(plain, 0x10000, 16, 0, 3), Error);
}

shm::wire::Hello goodHello(const shm::Layout& layout) {
  shm::wire::Hello h{};
  h.magic = shm::wire::kHelloMagic;
  h.bytes = layout.totalBytes;
  h.token = 7;
  h.pid = 1234;
  h.rank = 1;
  std::snprintf(h.name, sizeof(h.name), "/tern-0123456789abcdef-r1-p1234-0");
  return h;
}

ternResult_t decodeCode(const shm::wire::Hello& h, const shm::Layout& layout, size_t bytes = sizeof(shm::wire::Hello)) {
  try {
    shm::wire::decodeHello(&h, bytes, 1, layout);
    return ternSuccess;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
    return e.code();
  }
}

TEST(ShmWireTrust, Announcements) {
  const shm::Layout layout = shm::Layout::forRanks(2);
  shm::wire::Hello h = goodHello(layout);
  EXPECT_EQ(decodeCode(h, layout), ternSuccess);
  EXPECT_EQ(decodeCode(h, layout, sizeof(h) - 1), ternRemoteError);
  shm::wire::Hello bad = h;
  std::memset(bad.name, 'a', sizeof(bad.name));  // no terminator
  EXPECT_EQ(decodeCode(bad, layout), ternRemoteError);
  bad = h;
  std::snprintf(bad.name, sizeof(bad.name), "/../../home/user/file");
  EXPECT_EQ(decodeCode(bad, layout), ternRemoteError);
  bad = h;
  bad.bytes = layout.totalBytes * 2;
  EXPECT_EQ(decodeCode(bad, layout), ternRemoteError);
  bad = h;
  bad.rank = 0;
  EXPECT_EQ(decodeCode(bad, layout), ternRemoteError);
  bad = h;
  bad.pid = 0;
  EXPECT_EQ(decodeCode(bad, layout), ternRemoteError);

  const uint8_t outcome[2] = {1, 0x80};
  EXPECT_THROW(shm::wire::decodeOutcomes(outcome, 2, 2, 1), Error);
  EXPECT_THROW(shm::wire::decodeOutcomes(outcome, 1, 2, 1), Error);
  const uint8_t fine[2] = {7, 1};
  EXPECT_EQ(shm::wire::decodeOutcomes(fine, 2, 2, 1).size(), 2u);
}

}  // namespace
}  // namespace tern
