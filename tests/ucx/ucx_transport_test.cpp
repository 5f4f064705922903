// The UCX transport (src/transport/ucx) driven directly, ranks as threads of one process over loopback: the shared
// transport conformance checks (transport_conformance.hpp) plus the registration cache in use. UCX_TLS comes from
// the test's environment (ctest runs this binary once per transport set).
#include "transport/ucx/ucx_transport.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>

#include "transport_conformance.hpp"

namespace tern {
namespace {

using testing::runNetworkRanks;
using testing::waitAll;
namespace conformance = testing::conformance;

std::unique_ptr<Transport> makeUcx(const NetworkSetup& setup) { return UcxTransport::create(setup); }

TEST(UcxTransport, OrderedMixedSizesBothDirections) { conformance::orderedMixedSizes(makeUcx, "ucx"); }
TEST(UcxTransport, FifoMatchingOfEqualSizes) { conformance::fifoMatchingOfEqualSizes(makeUcx); }
TEST(UcxTransport, SizeMismatchIsAnError) { conformance::sizeMismatchIsAnError(makeUcx); }
TEST(UcxTransport, ProgressSleepsWhileWaiting) { conformance::progressSleepsWhileWaiting(makeUcx); }
TEST(UcxTransport, AbortFromAnotherThreadWakesAndPropagates) { conformance::abortFromAnotherThread(makeUcx); }
TEST(UcxTransport, VanishedPeerIsAnError) { conformance::vanishedPeerIsAnError(makeUcx); }

// The factory the communicator calls is this one (not network_fallback.cpp's stand-in).
TEST(UcxTransport, FactoryIsAvailable) { EXPECT_TRUE(ucxAvailable()); }

// Large messages sent repeatedly from one buffer register it once; unmapping the buffer drops the registration.
TEST(UcxTransport, RegistrationCacheReusesAndInvalidates) {
  const size_t kBytes = 4 << 20;
  runNetworkRanks(2, 60000, makeUcx, [&](Transport& t, TcpTransport&, int r) {
    auto& ucx = dynamic_cast<UcxTransport&>(t);
    const RegistrationCache* cache = ucx.registrationCache();
    if (cache == nullptr) GTEST_SKIP() << "registration cache off (no UCM memory hooks)";
    void* mem = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(mem, MAP_FAILED);
    std::memset(mem, r + 1, kBytes);
    for (int round = 0; round < 3; ++round) {
      Transfer x;
      if (r == 0) {
        ucx.postSend(1, mem, kBytes, &x);
      } else {
        ucx.postRecv(0, mem, kBytes, &x);
      }
      ASSERT_TRUE(waitAll(ucx, {&x}));
    }
    if (r == 1) {
      EXPECT_EQ(static_cast<uint8_t*>(mem)[kBytes - 1], 1);
    }
    auto before = cache->stats();
    EXPECT_EQ(before.misses, 1u);
    EXPECT_GE(before.hits, 2u);
    ::munmap(mem, kBytes);
    EXPECT_GE(cache->stats().invalidations, before.invalidations + 1) << "munmap did not reach the cache";
  });
}

}  // namespace
}  // namespace tern
