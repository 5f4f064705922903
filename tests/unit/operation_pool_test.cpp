// The per-thread operation pool (src/core/operation_pool.cpp): an operation comes back cleared for the next call,
// is never handed out while anyone else holds it, and a group's send and receive (held together until the group
// ends) are both recycled afterwards instead of allocated anew.
#include "core/operation_pool.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <thread>
#include <vector>

namespace tern {
namespace {

std::shared_ptr<Operation> pointToPoint() {
  return newOperation(Collective::kPointToPoint, nullptr, nullptr, 1, ternUint8, ternSum, 0);
}

TEST(OperationPool, RecycledOperationsComeBackCleared) {
  Operation* first = nullptr;
  {
    auto o = newOperation(Collective::kAlltoAllv, &first, &first, 0, ternFloat64, ternMax, 3);
    first = o.get();
    o->args.inPlace = true;
    o->args.sendCounts = {1, 2, 3};
    o->args.p2p.push_back({});
    o->transfers.push_back({true, 1, nullptr, 8});
    o->implicitCompression = true;
    o->done = true;
    o->result = ternSystemError;
    o->error = "earlier failure";
  }
  auto o = newOperation(Collective::kBroadcast, nullptr, nullptr, 7, ternInt32, ternSum, 2);
  ASSERT_EQ(o.get(), first) << "a released operation is recycled";
  EXPECT_EQ(o->args.coll, Collective::kBroadcast);
  EXPECT_EQ(o->args.count, 7u);
  EXPECT_EQ(o->args.dtype, ternInt32);
  EXPECT_EQ(o->args.op, ternSum);
  EXPECT_EQ(o->args.root, 2);
  EXPECT_FALSE(o->args.inPlace);
  EXPECT_TRUE(o->args.sendCounts.empty());
  EXPECT_GE(o->args.sendCounts.capacity(), 3u) << "the vectors keep their capacity";
  EXPECT_TRUE(o->args.p2p.empty());
  EXPECT_TRUE(o->transfers.empty());
  EXPECT_FALSE(o->implicitCompression);
  EXPECT_FALSE(o->done);
  EXPECT_EQ(o->result, ternSuccess);
  EXPECT_TRUE(o->error.empty());
}

TEST(OperationPool, AHeldOperationIsNeverHandedOutAgain) {
  std::vector<std::shared_ptr<Operation>> held;
  std::set<Operation*> seen;
  for (int i = 0; i < 10; ++i) {  // more than the pool keeps: the rest are new
    held.push_back(pointToPoint());
    EXPECT_TRUE(seen.insert(held.back().get()).second) << "call " << i << " got an operation still held";
  }
}

TEST(OperationPool, AGroupsPairIsRecycledAfterTheGroup) {
  std::set<Operation*> pair;
  {
    auto send = pointToPoint();
    auto recv = pointToPoint();
    ASSERT_NE(send.get(), recv.get());
    pair = {send.get(), recv.get()};
  }
  for (int step = 0; step < 3; ++step) {
    auto send = pointToPoint();
    auto recv = pointToPoint();
    EXPECT_EQ(pair.count(send.get()) + pair.count(recv.get()), 2u) << "step " << step << " allocated anew";
  }
}

TEST(OperationPool, ThreadsHaveTheirOwnOperations) {
  Operation* mine = pointToPoint().get();
  Operation* theirs = nullptr;
  std::shared_ptr<Operation> keep = pointToPoint();  // mine, held: the other thread must not get it
  std::thread([&] { theirs = pointToPoint().get(); }).join();
  EXPECT_NE(theirs, keep.get());
  EXPECT_EQ(keep.get(), mine);
}

}  // namespace
}  // namespace tern
