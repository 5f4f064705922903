// TERN_COMPRESS on stream-ordered allreduces of device buffers with the codecs on the device
// (core/device_compressed_calls.hpp): host threads pose as streams and the CPU codecs as the device's
// (host_streams.hpp, withCodecs), so that what runs here is the device path's schedule, its error feedback in
// "device" memory and its exchanges, against the host path's compressed allreduce of the same inputs, call after
// call (the feedback carries over): the same bits on every rank, every codec, fp32 and fp16, sum and avg, in and
// out of place, several pieces. On a GPU the codecs' own CPU == GPU identity is codec_cuda_test's (tests/gpu).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "base/env.hpp"
#include "common/gradient_value.hpp"
#include "common/host_streams.hpp"
#include "common/stream_calls.hpp"
#include "kernels/reduce.hpp"
#include "rank_threads.hpp"
#include "tern/tern.h"
#include "tern/tern_ext.h"

namespace tern::testing {
namespace {

cudaStream_t asStream(HostStream& s) { return reinterpret_cast<cudaStream_t>(&s); }

std::vector<char> inputBytes(ternDataType_t dtype, int rank, int call, size_t count) {
  std::vector<char> bytes(count * (dtype == ternFloat32 ? 4 : 2));
  for (size_t i = 0; i < count; ++i) {
    const float v = gradientValue(rank, call, i);
    if (dtype == ternFloat32) {
      std::memcpy(bytes.data() + 4 * i, &v, 4);
    } else {
      const uint16_t h = floatToHalf(v);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  return bytes;
}

struct Case {
  ternDataType_t dtype;
  ternRedOp_t op;
  size_t count;
  bool inPlace;
};

class DeviceCompressedCallsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The cost model declines compression on one host; the test wants the compressed path whatever it says.
    setenv("TERN_COMPRESS_WHEN", "always", 1);
    if (!knobs().compressAlways) {
      GTEST_SKIP() << "the knobs were read before TERN_COMPRESS_WHEN=always was set: run this test in a process of "
                      "its own (ctest does)";
    }
    dev.withCodecs = true;
    setDeviceStreamsForTesting(&dev);
  }
  void TearDown() override { setDeviceStreamsForTesting(nullptr); }

  HostStreams dev;
};

TEST_F(DeviceCompressedCallsTest, TernCompressOnDeviceBuffersGivesTheHostPathsBitsCallAfterCall) {
  const std::vector<Case> cases = {
      {ternFloat32, ternSum, 70001, false},
      {ternFloat32, ternAvg, 70001, true},
      {ternFloat16, ternAvg, 40003, false},
      {ternFloat32, ternSum, (size_t{1} << 21) + 5, false},  // two pieces of the two-phase exchange
  };
  constexpr int kCalls = 3;
  for (const char* codec : {"sign", "qsgd:4", "topk:0.01", "bf16"}) {
    for (const auto& [ranks, wireKind] :
         {std::pair{2, Wire::kInproc}, std::pair{3, Wire::kInproc}, std::pair{2, Wire::kTcp}}) {
      const int n = ranks;  // copies: lambdas capture variables, not structured bindings
      const Wire wire = wireKind;
      const std::string label = std::string(codec) + ", " + std::to_string(n) + " ranks over " + wireName(wire);
      ternConfig_t config = TERN_CONFIG_INITIALIZER;
      config.compress = codec;
      const int before = dev.codecSteps.load();
      runOnRanks(
          n, wire,
          [&](ternComm_t comm, int r) {
            SCOPED_TRACE(label);  // per thread: the ranks' failures name the codec and the job
            HostStream stream;
            // Every case's buffers live to the end: TERN_COMPRESS keys its error feedback by the receive buffer's
            // address, so a case whose buffer landed where a freed one was would inherit that one's state.
            std::deque<std::vector<char>> hostBuffers;  // a deque: references stay valid as it grows
            std::vector<void*> deviceBuffers;
            for (const Case& c : cases) {
              if (c.count > 100000 && (n != 2 || wire != Wire::kInproc)) continue;  // the large case once per codec
              SCOPED_TRACE(std::to_string(c.count) + (c.dtype == ternFloat32 ? " fp32 " : " fp16 ") +
                           (c.op == ternSum ? "sum" : "avg") + (c.inPlace ? " in place" : ""));
              const size_t bytes = c.count * (c.dtype == ternFloat32 ? 4 : 2);
              std::vector<char>& hostIn = hostBuffers.emplace_back(bytes);
              std::vector<char>& hostOut = hostBuffers.emplace_back(bytes);
              void* devIn = deviceBuffers.emplace_back(dev.allocDevice(bytes));
              void* devOut = c.inPlace ? devIn : deviceBuffers.emplace_back(dev.allocDevice(bytes));
              for (int call = 0; call < kCalls; ++call) {
                std::vector<char> in = inputBytes(c.dtype, r, call, c.count);
                std::memcpy(hostIn.data(), in.data(), bytes);
                void* hostDst = c.inPlace ? hostIn.data() : hostOut.data();
                ASSERT_EQ(ternAllReduce(hostIn.data(), hostDst, c.count, c.dtype, c.op, comm), ternSuccess)
                    << ternGetLastError(comm);
                char hostAlgo[128] = {};
                ternCommLastAlgorithm(comm, hostAlgo, sizeof hostAlgo);
                ASSERT_NE(std::strstr(hostAlgo, codec), nullptr) << "the host path did not compress: " << hostAlgo;
                std::vector<char> want(static_cast<char*>(hostDst), static_cast<char*>(hostDst) + bytes);

                dev.upload(devIn, in.data(), bytes);
                ASSERT_EQ(ternAllReduceOnStream(devIn, devOut, c.count, c.dtype, c.op, comm, asStream(stream)),
                          ternSuccess)
                    << ternGetLastError(comm);
                char devAlgo[128] = {};
                ternCommLastAlgorithm(comm, devAlgo, sizeof devAlgo);
                EXPECT_NE(std::strstr(devAlgo, "host double"), nullptr) << "not on the device codecs: " << devAlgo;
                ASSERT_TRUE(stream.synchronize());
                std::vector<char> got(bytes);
                dev.download(got.data(), devOut, bytes);
                size_t differ = 0;
                for (size_t i = 0; i < bytes; ++i) differ += got[i] != want[i] ? 1 : 0;
                EXPECT_EQ(differ, 0u) << "call " << call << ": bytes that differ from the host path's";
              }
            }
            for (void* p : deviceBuffers) dev.freeDevice(p);
            ternResult_t async = ternInternalError;
            ASSERT_EQ(ternCommGetAsyncError(comm, &async), ternSuccess);
            EXPECT_EQ(async, ternSuccess) << ternGetLastError(comm);
          },
          &config);
      EXPECT_GT(dev.codecSteps.load(), before) << label << ": the device codecs never ran";
    }
  }
}

TEST_F(DeviceCompressedCallsTest, HostBuffersOnASizeAgreedForTheDeviceAreRefused) {
  ternConfig_t config = TERN_CONFIG_INITIALIZER;
  config.compress = "bf16";
  runOnRanks(
      2, Wire::kInproc,
      [&](ternComm_t comm, int r) {
        HostStream stream;
        const size_t count = 70001, bytes = count * 4;
        std::vector<char> in = inputBytes(ternFloat32, r, 0, count);
        void* devBuf = dev.allocDevice(bytes);
        dev.upload(devBuf, in.data(), bytes);
        ASSERT_EQ(ternAllReduceOnStream(devBuf, devBuf, count, ternFloat32, ternSum, comm, asStream(stream)),
                  ternSuccess)
            << ternGetLastError(comm);
        ASSERT_TRUE(stream.synchronize());
        EXPECT_EQ(ternAllReduceOnStream(in.data(), in.data(), count, ternFloat32, ternSum, comm, asStream(stream)),
                  ternInvalidUsage);
        EXPECT_NE(std::strstr(ternGetLastError(nullptr), "not device memory"), nullptr) << ternGetLastError(nullptr);
        dev.freeDevice(devBuf);
      },
      &config);
}

}  // namespace
}  // namespace tern::testing
