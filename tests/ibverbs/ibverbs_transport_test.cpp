// The ibverbs transport (src/transport/ibverbs) end to end, ranks as threads of one process over loopback TCP for
// setup and the RDMA port TERN_IB_HCA selects for data: the shared transport conformance checks (their ability to
// fail is shown over UCX, tests/ucx/ucx_transport_test.cpp). Needs an RDMA device: ctest runs it through
// rdma_or_skip.sh, which skips (exit 77) where ibv_devices lists none.
#include "transport/ibverbs/ibverbs_transport.hpp"

#include <gtest/gtest.h>

#include "transport_conformance.hpp"

namespace tern {
namespace {

namespace conformance = testing::conformance;

std::unique_ptr<Transport> makeIbverbs(const NetworkSetup& setup) { return IbverbsTransport::create(setup); }

TEST(IbverbsTransport, FactoryIsAvailable) { EXPECT_TRUE(ibverbsAvailable()); }
TEST(IbverbsTransport, OrderedMixedSizesBothDirections) { conformance::orderedMixedSizes(makeIbverbs, "ibverbs"); }
TEST(IbverbsTransport, FifoMatchingOfEqualSizes) { conformance::fifoMatchingOfEqualSizes(makeIbverbs); }
TEST(IbverbsTransport, SizeMismatchIsAnError) { conformance::sizeMismatchIsAnError(makeIbverbs); }
TEST(IbverbsTransport, ProgressSleepsWhileWaiting) { conformance::progressSleepsWhileWaiting(makeIbverbs); }
TEST(IbverbsTransport, AbortFromAnotherThreadWakesAndPropagates) { conformance::abortFromAnotherThread(makeIbverbs); }
TEST(IbverbsTransport, ProgressReturnsWhenItsWaitIsOver) { conformance::progressReturnsWhenItsWaitIsOver(makeIbverbs); }
TEST(IbverbsTransport, VanishedPeerIsAnError) { conformance::vanishedPeerIsAnError(makeIbverbs); }
TEST(IbverbsTransport, FinishedPeerLeavesItsMessages) { conformance::finishedPeerLeavesItsMessages(makeIbverbs); }
TEST(IbverbsTransport, SetupTimesOutWhenAPeerNeverConnects) {
  conformance::setupTimesOutWhenAPeerNeverConnects(makeIbverbs);
}

}  // namespace
}  // namespace tern
