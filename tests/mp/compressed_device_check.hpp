// TERN_COMPRESS on device buffers (core/device_compressed_calls.hpp), one process per rank: each stream-ordered
// allreduce must equal, bit for bit, the host path's compressed allreduce of the same inputs (CPU codecs), call after
// call (the error feedback carries over), sum and avg, one piece and two. The launcher's environment names the codec
// (TERN_COMPRESS) and sets TERN_COMPRESS_WHEN=always. tests/gpu/device_check.cpp runs it on a GPU (the CUDA codecs),
// tests/mp/device_check.cpp on the emulated device (the CPU codecs posing as the device's).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <vector>

#include "common/gradient_value.hpp"
#include "mp/collectives_matrix.hpp"
#include "mp/rank_check.hpp"
#include "tern/tern_cuda.h"
#include "tern/tern_ext.h"

namespace compressed_device_check {

using tern::testing::gradientValue;

// Exits the process on the first difference; `codecs` is the device codecs' name that ternCommLastAlgorithm must show
// ("cuda", "host double"), and `algorithm`, when not null, the compressed algorithm both paths must name
// ("compressed_hier").
inline void run(ternComm_t comm, collectives_matrix::DeviceMemory& device, const char* codecs,
                const char* algorithm = nullptr) {
  const char* codec = std::getenv("TERN_COMPRESS");
  CHECK(codec != nullptr && *codec != 0, "compressed: set TERN_COMPRESS (and TERN_COMPRESS_WHEN=always)");
  // Every buffer lives to the end: TERN_COMPRESS keys its error feedback by the receive buffer's address, so a
  // buffer at a freed one's address would inherit that one's state (on one side and not the other).
  std::deque<std::vector<float>> hostBuffers;
  std::vector<void*> deviceBuffers;
  for (ternRedOp_t op : {ternSum, ternAvg}) {
    for (size_t count : {size_t{70001}, (size_t{1} << 21) + 5}) {
      const size_t bytes = count * sizeof(float);
      std::vector<float>& hostIn = hostBuffers.emplace_back(count);
      std::vector<float>& hostOut = hostBuffers.emplace_back(count);
      std::vector<float> got(count);
      void* in = deviceBuffers.emplace_back(device.alloc(bytes));
      void* out = deviceBuffers.emplace_back(device.alloc(bytes));
      for (int call = 0; call < 3; ++call) {
        for (size_t i = 0; i < count; ++i) hostIn[i] = gradientValue(rank_check::rank, call, i);
        OK(ternAllReduce(hostIn.data(), hostOut.data(), count, ternFloat32, op, comm), comm);
        char ran[128] = {};
        ternCommLastAlgorithm(comm, ran, sizeof ran);
        CHECK(algorithm == nullptr || std::strstr(ran, algorithm) != nullptr,
              "compressed: the host path ran %s, not %s", ran, algorithm);
        device.upload(in, hostIn.data(), bytes);
        OK(ternAllReduceOnStream(in, out, count, ternFloat32, op, comm, device.stream()), comm);
        ternCommLastAlgorithm(comm, ran, sizeof ran);
        CHECK(std::strstr(ran, codecs) != nullptr, "compressed: %s ran, not the device codecs (%s)", ran, codecs);
        CHECK(algorithm == nullptr || std::strstr(ran, algorithm) != nullptr,
              "compressed: the device path ran %s, not %s", ran, algorithm);
        device.synchronize();
        device.download(got.data(), out, bytes);
        size_t differ = 0;
        for (size_t i = 0; i < count; ++i) {
          differ += std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(hostOut[i]) ? 1 : 0;
        }
        CHECK(differ == 0, "compressed %s %s, %zu floats, call %d: %zu results differ from the host path's", codec,
              op == ternSum ? "sum" : "avg", count, call, differ);
      }
    }
  }
  for (void* p : deviceBuffers) device.release(p);
  std::printf("rank %d: TERN_COMPRESS=%s on device buffers, %s codecs == host path, bit for bit\n", rank_check::rank,
              codec, codecs);
}

// The ranks' plans follow what the model learns (Communicator::devicePlan): two ranks on two nodes joined by a slow
// link, TERN_COMPRESS=bf16 and TERN_LEARN_CALLS=`learnCalls`, no tune file. Allreduces of 4 MiB whose sums bf16
// cannot carry exactly: first `hostCalls` on host buffers, then stream-ordered ones on device buffers. Where the
// model starts at the NICs' line rate every call is exact until the communicator has timed `learnCalls`
// uncompressed calls and learned the link, and compressed after that: on the host path (the staged call's host
// collective) until the shape's plan is voted again, with the codecs on the device from its call `deviceFrom` on.
// Two ranks: one fp32 addition per element, so an uncompressed result equals the sum computed here.
inline void learn(ternComm_t comm, collectives_matrix::DeviceMemory& device, int learnCalls, int deviceFrom,
                  int hostCalls) {
  CHECK(rank_check::nranks == 2, "learn needs 2 ranks, not %d", rank_check::nranks);
  const size_t count = size_t{1} << 20;
  const size_t bytes = count * sizeof(float);
  auto fraction = [](size_t i, int rank) {
    return 1.0f + static_cast<float>((i * 13 + static_cast<size_t>(rank) * 5) % 97) / 1024.0f;
  };
  std::vector<float> in(count), got(count), want(count);
  for (size_t i = 0; i < count; ++i) {
    in[i] = fraction(i, rank_check::rank);
    want[i] = fraction(i, 0) + fraction(i, 1);
  }
  void* din = device.alloc(bytes);
  void* dout = device.alloc(bytes);
  const int deviceCalls = std::max(deviceFrom, learnCalls - hostCalls + 1) + 4;
  for (int call = 1; call <= hostCalls + deviceCalls; ++call) {
    const bool onDevice = call > hostCalls;
    if (onDevice) {
      device.upload(din, in.data(), bytes);
      OK(ternAllReduceOnStream(din, dout, count, ternFloat32, ternSum, comm, device.stream()), comm);
      device.synchronize();
      device.download(got.data(), dout, bytes);
    } else {
      OK(ternAllReduce(in.data(), got.data(), count, ternFloat32, ternSum, comm), comm);
    }
    char ran[128] = {};
    ternCommLastAlgorithm(comm, ran, sizeof ran);
    size_t differ = 0;
    for (size_t i = 0; i < count; ++i) differ += got[i] != want[i] ? 1 : 0;
    const bool compressed = differ > count / 4;
    CHECK(compressed == (call > learnCalls),
          "call %d (TERN_LEARN_CALLS=%d): %zu of %zu elements differ from the exact sum: expected %s", call, learnCalls,
          differ, count, call > learnCalls ? "compressed" : "exact");
    const bool deviceCodecs = std::strstr(ran, "host double") != nullptr;
    CHECK(deviceCodecs == (onDevice && call - hostCalls >= deviceFrom),
          "call %d (device call %d): %s ran, expected the codecs on the device from device call %d", call,
          call - hostCalls, ran, deviceFrom);
    std::printf("rank %d: %s call %d %s (%zu of %zu elements differ), %s\n", rank_check::rank,
                onDevice ? "device" : "host", call, compressed ? "compressed" : "exact", differ, count, ran);
  }
  device.release(din);
  device.release(dout);
}

}  // namespace compressed_device_check
