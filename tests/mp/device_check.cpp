// The collectives matrix (tests/mp/collectives_matrix.hpp) through the stream-ordered calls of tern_cuda.h, one
// process per rank, on machines without a GPU: host threads pose as CUDA streams and PROT_NONE ranges as device
// memory (tests/common/host_streams.hpp), so everything of the device path but the CUDA driver itself runs for real
// (staging, gating, the completion flag, groups) over the job's transports. tests/gpu/device_check.cpp runs the same
// matrix on a GPU. `compressed`: TERN_COMPRESS on device buffers, the CPU codecs posing as the device's, against the
// host path's bits (mp/compressed_device_check.hpp). `learn`: TERN_COMPRESS's decisions on device buffers follow
// the network the model learns (compressed_device_check::learn); TERN_TEST_GPU, when set, is the PCI bus id of the
// GPU each rank poses as driving (as cudaSetDevice would make it current), for a TERN_TOPO_FILE that lists it.
//
//   tern_device_check [all] [--large full|subset|lean|none]
//   TERN_COMPRESS=sign TERN_COMPRESS_WHEN=always tern-run -n N tern_device_check compressed [ALGORITHM]
//   TERN_COMPRESS=bf16 TERN_LEARN_CALLS=CALLS tern-run ... tern_device_check learn CALLS DEVICE_FROM [HOST_CALLS]
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/host_streams.hpp"
#include "core/device_streams.hpp"
#include "mp/collectives_matrix.hpp"
#include "mp/compressed_device_check.hpp"
#include "mp/rank_check.hpp"

namespace {

class EmulatedDevice final : public collectives_matrix::DeviceMemory {
 public:
  explicit EmulatedDevice(tern::testing::HostStreams& streams) : streams_(streams) {}
  void* alloc(size_t bytes) override { return streams_.allocDevice(bytes); }
  void release(void* p) override { streams_.freeDevice(p); }
  void upload(void* device, const void* host, size_t bytes) override { streams_.upload(device, host, bytes); }
  void download(void* host, const void* device, size_t bytes) override { streams_.download(host, device, bytes); }
  cudaStream_t stream() override { return reinterpret_cast<cudaStream_t>(&stream_); }
  void synchronize() override { CHECK(stream_.synchronize(), "the stream did not finish within 60 s"); }

 private:
  tern::testing::HostStreams& streams_;
  tern::testing::HostStream stream_;
};

}  // namespace

int main(int argc, char** argv) {
  using collectives_matrix::LargeCount;
  LargeCount large = LargeCount::kSubset;
  const bool compressed = argc > 1 && std::strcmp(argv[1], "compressed") == 0;
  const bool learn = argc > 3 && std::strcmp(argv[1], "learn") == 0;
  if (!compressed && !learn &&
      !collectives_matrix::parseLargeOption(
          argc, argv, 2, "all|compressed [ALGORITHM]|learn CALLS DEVICE_FROM [HOST_CALLS]", &large)) {
    return 2;
  }
  tern::testing::HostStreams streams;
  streams.withCodecs = compressed || learn;
  tern::setDeviceStreamsForTesting(&streams);
  if (const char* gpu = std::getenv("TERN_TEST_GPU")) streams.setCurrentDevice(gpu);
  ternComm_t comm = rank_check::initFromEnv();
  {
    EmulatedDevice device(streams);
    if (learn) {
      compressed_device_check::learn(comm, device, std::atoi(argv[2]), std::atoi(argv[3]),
                                     argc > 4 ? std::atoi(argv[4]) : 0);
    } else if (compressed) {
      compressed_device_check::run(comm, device, "host double", argc > 2 ? argv[2] : nullptr);
    } else {
      collectives_matrix::runOnDevice(comm, device, large);
    }
  }
  OK(ternBarrier(comm), comm);
  CHECK(streams.stuckWaits.load() == 0, "%d stream waits never ended", streams.stuckWaits.load());
  std::printf("rank %d: stream-ordered collectives OK (emulated device)\n", rank_check::rank);
  ternCommDestroy(comm);
  tern::setDeviceStreamsForTesting(nullptr);
  return 0;
}
