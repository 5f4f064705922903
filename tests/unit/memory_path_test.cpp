// The memory-typed data path (issue 16): buffers travel as typed references (pointer, bytes, memory kind) through
// the executor, the transports and the compute backend. These tests run a real schedule over the in-process
// transport and check what reaches the backend and the transport, and that memory a component cannot touch, or a
// span outside its buffer, is refused before anything is read or written.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/registry.hpp"
#include "base/error.hpp"
#include "base/unique_id.hpp"
#include "exec/compute_backend.hpp"
#include "exec/executor.hpp"
#include "tern/tern.h"
#include "transport/inproc/inproc_transport.hpp"
#include "transport/shm/buffer_registry.hpp"

namespace tern {
namespace {

// The CPU backend, counting the local steps it is given and the memory kinds they name.
class CountingBackend final : public ComputeBackend {
 public:
  const char* name() const override { return "counting"; }
  bool runsOn(MemoryKind kind) const override { return isHostMemory(kind); }
  void reduce(const MemRef& dst, const ConstMemRef& a, const ConstMemRef& b, ternDataType_t dtype,
              ternRedOp_t op) const override {
    ++reduces;
    if (dst.kind == MemoryKind::kHostRegistered || a.kind == MemoryKind::kHostRegistered) ++registeredSeen;
    cpuBackend().reduce(dst, a, b, dtype, op);
  }
  void copy(const MemRef& dst, const ConstMemRef& src) const override {
    ++copies;
    cpuBackend().copy(dst, src);
  }
  void finalizeAverage(const MemRef& dst, ternDataType_t dtype, int divisor) const override {
    ++finalizes;
    cpuBackend().finalizeAverage(dst, dtype, divisor);
  }
  void encode(const compress::Codec& c, compress::ErrorFeedback* f, const ConstMemRef& src, ternDataType_t t,
              uint64_t n, const MemRef& payload, const compress::EncodeContext& ec) const override {
    cpuBackend().encode(c, f, src, t, n, payload, ec);
  }
  void decode(const compress::Codec& c, const ConstMemRef& payload, uint64_t n, const MemRef& dst,
              bool accumulate) const override {
    cpuBackend().decode(c, payload, n, dst, accumulate);
  }
  void castFromFloat(const MemRef& dst, ternDataType_t t, const ConstMemRef& src, uint64_t n) const override {
    cpuBackend().castFromFloat(dst, t, src, n);
  }
  mutable std::atomic<int> reduces{0}, copies{0}, finalizes{0}, registeredSeen{0};
};

// Forwards to an inner transport and records the memory kinds of what is posted.
class KindRecorder final : public Transport {
 public:
  explicit KindRecorder(Transport& inner) : inner_(inner) {}
  const char* name() const override { return inner_.name(); }
  int progress(int waitMs) override { return inner_.progress(waitMs); }
  void abort(const std::string& reason) override { inner_.abort(reason); }
  bool hasPending() const override { return inner_.hasPending(); }
  std::vector<MemoryKind> kinds;

 protected:
  void startSend(int peer, const ConstMemRef& src, Transfer* t) override {
    kinds.push_back(src.kind);
    inner_.postSend(peer, src, t);
  }
  void startRecv(int peer, const MemRef& dst, Transfer* t) override {
    kinds.push_back(dst.kind);
    inner_.postRecv(peer, dst, t);
  }

 private:
  Transport& inner_;
};

std::vector<std::unique_ptr<InprocTransport>> joinInproc(int n) {
  const Secret secret = Secret::random();
  std::vector<std::unique_ptr<InprocTransport>> transports(n);
  std::vector<std::thread> joins;
  for (int r = 0; r < n; ++r) joins.emplace_back([&, r] { transports[r] = InprocTransport::join(secret, r, n); });
  for (auto& t : joins) t.join();
  return transports;
}

ExecContext contextFor(Transport* transport, int rank, int n, const ComputeBackend* compute) {
  ExecContext ctx;
  ctx.transport = transport;
  ctx.compute = compute;
  ctx.dtype = ternFloat32;
  ctx.op = ternAvg;
  ctx.nranks = n;
  ctx.rank = rank;
  ctx.deadline = Clock::now() + std::chrono::seconds(30);
  ctx.what = "allreduce";
  return ctx;
}

Schedule ringAllReduce(size_t count, int rank, int n) {
  CollArgs args;
  args.coll = Collective::kAllReduce;
  args.count = count;
  args.dtype = ternFloat32;
  args.op = ternAvg;
  return findAlgorithm(Collective::kAllReduce, "ring")->build(args, rank, n, BuildOptions{});
}

// Every local step of a real allreduce goes to the context's backend, and the buffers' kinds (registered input
// and output, plain scratch) reach both the backend and the transport.
TEST(MemoryPath, LocalStepsRunOnTheContextsBackendAndKindsReachTheTransport) {
  constexpr int kRanks = 3;
  constexpr size_t kCount = 1023;
  auto transports = joinInproc(kRanks);
  std::vector<void*> in(kRanks), out(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(ternMemAlloc(&in[r], kCount * sizeof(float)), ternSuccess);
    ASSERT_EQ(ternMemAlloc(&out[r], kCount * sizeof(float)), ternSuccess);
    for (size_t i = 0; i < kCount; ++i) static_cast<float*>(in[r])[i] = static_cast<float>(r * 3 + i % 7);
  }
  std::vector<CountingBackend> backends(kRanks);
  std::vector<std::unique_ptr<KindRecorder>> recorders;
  for (auto& t : transports) recorders.push_back(std::make_unique<KindRecorder>(*t));
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      const Schedule s = ringAllReduce(kCount, r, kRanks);
      std::vector<char> scratch(s.scratchBytes);
      const size_t bytes = kCount * sizeof(float);
      const ExecBuffers buffers{ConstMemRef{in[r], bytes, shm::classifyHostMemory(in[r], bytes)},
                                MemRef{out[r], bytes, shm::classifyHostMemory(out[r], bytes)},
                                hostMemory(scratch.data(), scratch.size())};
      try {
        executeSchedule(s, buffers, contextFor(recorders[r].get(), r, kRanks, &backends[r]));
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << r << ": " << e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < kCount; ++i) {
      const float sum =
          static_cast<float>(0 * 3 + i % 7) + static_cast<float>(1 * 3 + i % 7) + static_cast<float>(2 * 3 + i % 7);
      ASSERT_EQ(static_cast<float*>(out[r])[i], sum / kRanks) << "rank " << r << " element " << i;
    }
    EXPECT_GT(backends[r].reduces.load(), 0) << "rank " << r;
    EXPECT_GT(backends[r].finalizes.load(), 0) << "avg's division is a backend step";
    EXPECT_GT(backends[r].registeredSeen.load(), 0) << "the registered buffers' kind reached the backend";
    bool sawRegistered = false;
    for (MemoryKind k : recorders[r]->kinds) sawRegistered |= k == MemoryKind::kHostRegistered;
    EXPECT_TRUE(sawRegistered) << "rank " << r << ": the transport saw only plain host memory";
  }
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(ternMemFree(in[r]), ternSuccess);
    EXPECT_EQ(ternMemFree(out[r]), ternSuccess);
  }
}

// Device memory on the CPU backend and host transports is refused before any step runs: nothing is posted, the
// message names the buffer, the kind and the component.
TEST(MemoryPath, DeviceMemoryIsRefusedBeforeAnythingRuns) {
  auto transports = joinInproc(2);
  KindRecorder recorder(*transports[0]);
  const Schedule s = ringAllReduce(64, 0, 2);
  std::vector<float> in(64, 1.0f), out(64, 0.0f);
  std::vector<char> scratch(s.scratchBytes);
  ExecBuffers buffers{hostMemory(in.data(), 256), MemRef{out.data(), 256, MemoryKind::kDevice},
                      hostMemory(scratch.data(), scratch.size())};
  try {
    executeSchedule(s, buffers, contextFor(&recorder, 0, 2, &cpuBackend()));
    FAIL() << "device memory was accepted by the CPU backend";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ternInvalidUsage);
    EXPECT_NE(std::string(e.what()).find("output buffer is device memory"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cpu compute backend"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(recorder.kinds.empty()) << "a transfer was posted before the refusal";
  EXPECT_EQ(out, std::vector<float>(64, 0.0f));

  // A backend that could run on device memory still meets a transport that does not carry it.
  class DeviceCapable final : public ComputeBackend {
   public:
    const char* name() const override { return "device-capable"; }
    bool runsOn(MemoryKind) const override { return true; }
    void reduce(const MemRef&, const ConstMemRef&, const ConstMemRef&, ternDataType_t, ternRedOp_t) const override {}
    void copy(const MemRef&, const ConstMemRef&) const override {}
    void finalizeAverage(const MemRef&, ternDataType_t, int) const override {}
    void encode(const compress::Codec&, compress::ErrorFeedback*, const ConstMemRef&, ternDataType_t, uint64_t,
                const MemRef&, const compress::EncodeContext&) const override {}
    void decode(const compress::Codec&, const ConstMemRef&, uint64_t, const MemRef&, bool) const override {}
    void castFromFloat(const MemRef&, ternDataType_t, const ConstMemRef&, uint64_t) const override {}
  } deviceCapable;
  try {
    executeSchedule(s, buffers, contextFor(&recorder, 0, 2, &deviceCapable));
    FAIL() << "device memory was accepted by the inproc transport";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ternInvalidUsage);
    EXPECT_NE(std::string(e.what()).find("inproc transport does not carry"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(recorder.kinds.empty());
}

// A transport refuses a memory kind it does not carry at postSend/postRecv, with nothing left pending.
TEST(MemoryPath, TransportRefusesMemoryItDoesNotCarry) {
  auto transports = joinInproc(2);
  float value = 1.0f;
  Transfer t;
  try {
    transports[0]->postSend(1, ConstMemRef{&value, sizeof(value), MemoryKind::kDevice}, &t);
    FAIL() << "device memory was posted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ternInvalidUsage);
    EXPECT_STREQ(e.what(), "the inproc transport cannot send to rank 1: it does not carry device memory");
  }
  EXPECT_THROW(transports[1]->postRecv(0, MemRef{&value, sizeof(value), MemoryKind::kDevice}, &t), Error);
  EXPECT_FALSE(transports[0]->hasPending());
  EXPECT_FALSE(transports[1]->hasPending());
  EXPECT_TRUE(transports[0]->carries(MemoryKind::kHost));
  EXPECT_TRUE(transports[0]->carries(MemoryKind::kHostRegistered));
}

// A schedule that reaches past one of its buffers is an error before any step runs (no stray read or write).
TEST(MemoryPath, SpanOutsideItsBufferIsRefused) {
  auto transports = joinInproc(1);
  ScheduleBuilder b("overreach");
  b.copy(outputSpan(0, 64), inputSpan(0, 64));
  b.copy(outputSpan(64, 64), inputSpan(64, 64));  // the output buffer below has 100 bytes
  const Schedule s = b.take();
  std::vector<char> in(128, 'a'), out(128, 'z');
  ExecBuffers buffers{hostMemory(in.data(), 128), hostMemory(out.data(), 100), {}};
  ExecContext ctx = contextFor(transports[0].get(), 0, 1, &cpuBackend());
  try {
    executeSchedule(s, buffers, ctx);
    FAIL() << "the overreaching span ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ternInternalError);
    EXPECT_NE(std::string(e.what()).find("step 1 reaches bytes [64, 128) of its output buffer, which has 100"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(out, std::vector<char>(128, 'z')) << "a step ran before the check";
  buffers.output.bytes = 128;
  executeSchedule(s, buffers, ctx);
  EXPECT_EQ(out, in);
}

// ternMemAlloc memory is host-registered over exactly its own range; everything else is plain host memory.
TEST(MemoryPath, ClassifiesRegisteredHostMemory) {
  std::vector<char> heap(4096);
  EXPECT_EQ(shm::classifyHostMemory(heap.data(), heap.size()), MemoryKind::kHost);
  EXPECT_EQ(shm::classifyHostMemory(nullptr, 0), MemoryKind::kHost);
  void* p = nullptr;
  ASSERT_EQ(ternMemAlloc(&p, 10000), ternSuccess);
  char* c = static_cast<char*>(p);
  EXPECT_EQ(shm::classifyHostMemory(c, 10000), MemoryKind::kHostRegistered);
  EXPECT_EQ(shm::classifyHostMemory(c + 100, 50), MemoryKind::kHostRegistered);
  EXPECT_EQ(shm::classifyHostMemory(c + 100, 1 << 20), MemoryKind::kHost) << "a range running past the buffer";
  EXPECT_EQ(ternMemFree(p), ternSuccess);
  EXPECT_EQ(shm::classifyHostMemory(c, 10000), MemoryKind::kHost) << "after ternMemFree";
  EXPECT_STREQ(memoryKindName(MemoryKind::kHostRegistered), "host-registered");
}

}  // namespace
}  // namespace tern
