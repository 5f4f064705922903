// The executor keeps the wire busy while it runs long local steps: a transport moves posted transfers only when it
// is progressed, so a copy or reduction of several MiB runs in slices with a non-blocking progress call between
// them (src/exec/executor.cpp). These tests run real schedules over a transport that counts those calls and
// completes its transfers only when the executor waits, so what happened during the local step is visible.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "exec/compute_backend.hpp"
#include "exec/executor.hpp"
#include "tern/tern.h"

namespace tern {
namespace {

// Posted transfers stay pending through every non-blocking progress call (counted) and complete at the first
// waiting one: receives then hold a fill byte, so the test can tell them from local copies.
class WaitingTransport final : public Transport {
 public:
  const char* name() const override { return "waiting"; }
  int progress(int waitMs) override {
    if (waitMs == 0) {
      ++nonBlockingCalls;
      return 0;
    }
    int completed = 0;
    for (const Posted& p : posted_) {
      if (p.recv != nullptr) std::memset(p.recv, kFill, p.transfer->bytes);
      p.transfer->done = true;
      ++completed;
    }
    posted_.clear();
    return completed;
  }
  void abort(const std::string&) override {}
  bool hasPending() const override { return !posted_.empty(); }

  static constexpr unsigned char kFill = 0x5a;
  int nonBlockingCalls = 0;

 protected:
  void startSend(int, const ConstMemRef& src, Transfer* t) override {
    t->bytes = src.bytes;
    posted_.push_back({t, nullptr});
  }
  void startRecv(int, const MemRef& dst, Transfer* t) override {
    t->bytes = dst.bytes;
    posted_.push_back({t, dst.data});
  }

 private:
  struct Posted {
    Transfer* transfer;
    void* recv;
  };
  std::vector<Posted> posted_;
};

ExecContext contextFor(Transport* transport, int rank, int n, ternDataType_t dtype) {
  ExecContext ctx;
  ctx.transport = transport;
  ctx.dtype = dtype;
  ctx.op = ternSum;
  ctx.nranks = n;
  ctx.rank = rank;
  ctx.deadline = Clock::now() + std::chrono::seconds(30);
  ctx.what = "alltoall";
  return ctx;
}

// A 2-rank alltoall's own block (half the buffer) is copied while the other half is in flight: with a 9 MiB
// block and odd-sized elements, the copy runs in slices with the transport progressed between them, and still
// copies every byte (the slices cover the block exactly, whole elements each).
TEST(ExecutorOverlap, LongLocalCopyProgressesTheTransportBetweenSlices) {
  for (ternDataType_t dtype : {ternFloat32, ternFloat16, ternInt8, ternFloat64}) {
    const size_t esize = dtype == ternFloat64 ? 8 : dtype == ternFloat32 ? 4 : dtype == ternFloat16 ? 2 : 1;
    const size_t count = (size_t{9} << 20) / esize + 3;  // per rank: a 9 MiB block and a few elements
    const size_t bytes = count * esize;
    CollArgs args;
    args.coll = Collective::kAlltoAll;
    args.count = count;
    args.dtype = dtype;
    const Schedule s = findAlgorithm(Collective::kAlltoAll, "pairwise")->build(args, 1, 2, BuildOptions{});
    std::vector<unsigned char> in(2 * bytes), out(2 * bytes, 0);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 7 + i / 4099);
    WaitingTransport transport;
    const ExecBuffers buffers{hostMemory(in.data(), in.size()), hostMemory(out.data(), out.size()), MemRef{}};
    executeSchedule(s, buffers, contextFor(&transport, 1, 2, dtype));
    EXPECT_GE(transport.nonBlockingCalls, 4) << "a 9 MiB copy in 2 MiB slices progresses at least 4 times";
    EXPECT_EQ(std::memcmp(out.data() + bytes, in.data() + bytes, bytes), 0) << "rank 1's own block";
    for (size_t i = 0; i < bytes; ++i) {
      ASSERT_EQ(out[i], WaitingTransport::kFill) << "the block received from rank 0, byte " << i;
    }
  }
}

// Without transfers in flight nothing is sliced: a one-rank schedule's copy is one backend call and never calls
// the transport.
TEST(ExecutorOverlap, LocalCopyWithNothingInFlightRunsWhole) {
  const size_t count = size_t{3} << 20;  // 12 MiB of float32
  CollArgs args;
  args.coll = Collective::kAlltoAll;
  args.count = count;
  args.dtype = ternFloat32;
  const Schedule s = findAlgorithm(Collective::kAlltoAll, "pairwise")->build(args, 0, 1, BuildOptions{});
  std::vector<float> in(count), out(count, 0.0f);
  for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>(i % 1000);
  WaitingTransport transport;
  const ExecBuffers buffers{hostMemory(in.data(), count * sizeof(float)), hostMemory(out.data(), count * sizeof(float)),
                            MemRef{}};
  executeSchedule(s, buffers, contextFor(&transport, 0, 1, ternFloat32));
  EXPECT_EQ(transport.nonBlockingCalls, 0);
  EXPECT_EQ(in, out);
}

}  // namespace
}  // namespace tern
