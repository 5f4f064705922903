// The UCX transport (src/transport/ucx) driven directly, ranks as threads of one process over loopback: the shared
// transport conformance checks (transport_conformance.hpp), the same checks run over deliberately broken versions
// of it (faulty_transport.hpp) to show that each can fail, and the registration cache in use. UCX_TLS comes from
// the test's environment (ctest runs this binary once per transport set).
#include "transport/ucx/ucx_transport.hpp"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "faulty_transport.hpp"
#include "transport_conformance.hpp"

namespace tern {
namespace {

using testing::Fault;
using testing::NetworkFactory;
using testing::runNetworkRanks;
using testing::waitAll;
namespace conformance = testing::conformance;

std::unique_ptr<Transport> makeUcx(const NetworkSetup& setup) { return UcxTransport::create(setup); }

TEST(UcxTransport, OrderedMixedSizesBothDirections) { conformance::orderedMixedSizes(makeUcx, "ucx"); }
TEST(UcxTransport, FifoMatchingOfEqualSizes) { conformance::fifoMatchingOfEqualSizes(makeUcx); }
TEST(UcxTransport, SizeMismatchIsAnError) { conformance::sizeMismatchIsAnError(makeUcx); }
TEST(UcxTransport, ProgressSleepsWhileWaiting) { conformance::progressSleepsWhileWaiting(makeUcx); }
TEST(UcxTransport, ProgressReturnsWhenItsWaitIsOver) { conformance::progressReturnsWhenItsWaitIsOver(makeUcx); }
TEST(UcxTransport, AbortFromAnotherThreadWakesAndPropagates) { conformance::abortFromAnotherThread(makeUcx); }
TEST(UcxTransport, VanishedPeerIsAnError) { conformance::vanishedPeerIsAnError(makeUcx); }
TEST(UcxTransport, FinishedPeerLeavesItsMessages) { conformance::finishedPeerLeavesItsMessages(makeUcx); }
TEST(UcxTransport, SetupTimesOutWhenAPeerNeverConnects) { conformance::setupTimesOutWhenAPeerNeverConnects(makeUcx); }

// The factory the communicator calls is this one (not network_fallback.cpp's stand-in).
TEST(UcxTransport, FactoryIsAvailable) { EXPECT_TRUE(ucxAvailable()); }

// ---- The checks can fail ------------------------------------------------------------------------------------------

// The gtest failures `body` reports on any thread, captured instead of failing the running test.
std::vector<std::string> failuresOf(const std::function<void()>& body) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter capture(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ALL_THREADS, &results);
    body();
  }
  std::vector<std::string> out;
  for (int i = 0; i < results.size(); ++i) {
    if (results.GetTestPartResult(i).failed()) out.push_back(results.GetTestPartResult(i).message());
  }
  return out;
}

NetworkFactory ucxWith(Fault fault) {
  return [fault](const NetworkSetup& setup) -> std::unique_ptr<Transport> {
    return std::make_unique<testing::FaultyTransport>(UcxTransport::create(setup), fault);
  };
}

// Runs `check` over UCX broken by `fault`: it must fail, and one of its failures must name `symptom`.
void expectCaught(Fault fault, const std::function<void(const NetworkFactory&)>& check, const std::string& symptom) {
  auto failures = failuresOf([&] { check(ucxWith(fault)); });
  ASSERT_FALSE(failures.empty()) << "the check passed over a transport with the fault '" << faultName(fault) << "'";
  bool named = std::any_of(failures.begin(), failures.end(),
                           [&](const std::string& f) { return f.find(symptom) != std::string::npos; });
  EXPECT_TRUE(named) << "no failure under '" << faultName(fault) << "' mentions '" << symptom
                     << "'; the first: " << failures.front();
}

auto mixedOnTwoRanks = [](const NetworkFactory& f) { conformance::orderedMixedSizes(f, "ucx", {2}); };

TEST(UcxConformanceCanFail, PassThroughWithoutFaultPasses) {
  auto failures = failuresOf([] {
    mixedOnTwoRanks(ucxWith(Fault::kNone));
    conformance::fifoMatchingOfEqualSizes(ucxWith(Fault::kNone));
    conformance::sizeMismatchIsAnError(ucxWith(Fault::kNone));
  });
  EXPECT_TRUE(failures.empty()) << failures.size() << " failure(s), the first: " << failures.front();
}

TEST(UcxConformanceCanFail, DroppedLastByte) { expectCaught(Fault::kDropLastByte, mixedOnTwoRanks, "the last byte"); }

TEST(UcxConformanceCanFail, SwappedDeliveries) {
  expectCaught(Fault::kSwapEqualSizeNeighbours, conformance::fifoMatchingOfEqualSizes, "wrong at byte 0");
  expectCaught(Fault::kSwapEqualSizeNeighbours, mixedOnTwoRanks, "message 16 (1048579 bytes) from rank");
}

TEST(UcxConformanceCanFail, OneBitFlippedInTheMiddleOfALargeMessage) {
  expectCaught(Fault::kFlipBitInLargeMessage, mixedOnTwoRanks, "wrong at byte 524289 (1 of 1048579 bytes wrong");
}

TEST(UcxConformanceCanFail, WritePastTheEnd) {
  expectCaught(Fault::kOverrunByOne, mixedOnTwoRanks, "written past its end");
}

TEST(UcxConformanceCanFail, SwallowedErrors) {
  expectCaught(Fault::kSwallowErrors, conformance::sizeMismatchIsAnError, "was accepted by a 200-byte receive");
  expectCaught(Fault::kSwallowErrors, conformance::vanishedPeerIsAnError, "the receive completed without the peer");
}

TEST(UcxConformanceCanFail, SpinningProgress) {
  expectCaught(Fault::kSpin, conformance::progressSleepsWhileWaiting, "burned");
}

// The pattern itself tells messages apart: another sender, receiver or message number, or the same message shifted
// by a multiple of 256 bytes (where a byte ramp would repeat), agrees in about 1 byte of 256 only.
TEST(TransportPattern, TellsMessagesAndOffsetsApart) {
  const size_t kBytes = 1 << 16;
  auto base = conformance::patternMessage(kBytes + 4096, 1, 2, 5);
  auto agreeing = [&](const std::vector<uint8_t>& other, size_t shift) {
    size_t same = 0;
    for (size_t i = 0; i < kBytes; ++i) same += base[i] == other[i + shift];
    return same;
  };
  const size_t kMostAlike = kBytes / 128;  // twice the chance level
  EXPECT_LT(agreeing(conformance::patternMessage(kBytes, 2, 2, 5), 0), kMostAlike);
  EXPECT_LT(agreeing(conformance::patternMessage(kBytes, 1, 3, 5), 0), kMostAlike);
  EXPECT_LT(agreeing(conformance::patternMessage(kBytes, 1, 2, 6), 0), kMostAlike);
  EXPECT_LT(agreeing(conformance::patternMessage(kBytes, 2, 1, 5), 0), kMostAlike);
  for (size_t shift : {size_t{8}, size_t{256}, size_t{4096}}) EXPECT_LT(agreeing(base, shift), kMostAlike) << shift;
  size_t first = 0;
  EXPECT_EQ(conformance::countWrongBytes(base.data(), base.size(), 1, 2, 5, &first), 0u);
  EXPECT_EQ(first, base.size());
  base[777] ^= 1;
  EXPECT_EQ(conformance::countWrongBytes(base.data(), base.size(), 1, 2, 5, &first), 1u);
  EXPECT_EQ(first, 777u);
}

// ---- Registration cache in use ------------------------------------------------------------------------------------

// Large messages sent repeatedly from one buffer register it once; unmapping the buffer drops the registration, and
// new memory mapped at the same address is registered anew: every round's bytes arrive whole.
TEST(UcxTransport, RegistrationCacheReusesAndInvalidates) {
  const size_t kBytes = 4 << 20;
  runNetworkRanks(2, 60000, makeUcx, [&](Transport& t, TcpTransport&, int r) {
    auto& ucx = dynamic_cast<UcxTransport&>(t);
    const RegistrationCache* cache = ucx.registrationCache();
    if (cache == nullptr) GTEST_SKIP() << "registration cache off (no UCM memory hooks)";
    auto round = [&](uint8_t* mem, uint64_t message) {
      Transfer x;
      if (r == 0) {
        conformance::fillPattern(mem, kBytes, 0, 1, message);
        ucx.postSend(1, mem, kBytes, &x);
      } else {
        conformance::fillPattern(mem, kBytes, 0, 1, message, true);
        ucx.postRecv(0, mem, kBytes, &x);
      }
      ASSERT_TRUE(waitAll(ucx, {&x}));
      if (r == 1) {
        size_t first = 0;
        EXPECT_EQ(conformance::countWrongBytes(mem, kBytes, 0, 1, message, &first), 0u)
            << "round " << message << ": first wrong byte " << first;
      }
    };
    void* mem = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(mem, MAP_FAILED);
    for (uint64_t m = 0; m < 3; ++m) round(static_cast<uint8_t*>(mem), m);
    auto before = cache->stats();
    EXPECT_EQ(before.misses, 1u);
    EXPECT_GE(before.hits, 2u);
    ::munmap(mem, kBytes);
    EXPECT_GE(cache->stats().invalidations, before.invalidations + 1) << "munmap did not reach the cache";

    void* again = ::mmap(mem, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(again, MAP_FAILED);
    round(static_cast<uint8_t*>(again), 3);
    if (again == mem) {
      EXPECT_EQ(cache->stats().misses, before.misses + 1) << "the stale registration was reused";
    }
    ::munmap(again, kBytes);
  });
}

}  // namespace
}  // namespace tern
