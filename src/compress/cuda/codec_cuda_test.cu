// codec_cuda_test: the CUDA codecs against the CPU codecs, bit for bit, then GPU throughput.
//
// For every codec, input dtype, size (tails of every kernel, several grid sizes), seed, chunk offset and with and
// without error feedback, it compares the payload bytes, the updated residual and the decoded output (accumulate
// and overwrite) of the GPU with the CPU's. Then it times every kernel on a large tensor and prints a table next to
// the device-to-device copy bandwidth.
//
//   codec_cuda_test [--quick] [--max-n=N] [--sizes=N,N,...] [--only=SPEC] [--no-bench] [--bench-mib=256]
//                   [--iters=20]
//
// Exit status: 0 all equal, 1 a mismatch or CUDA error, 77 no CUDA device (a skip: ctest's SKIP_RETURN_CODE).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "compress/codec_factory.hpp"
#include "compress/codec_math.hpp"
#include "compress/cuda/codec_cuda.hpp"
#include "compress/cuda/device_common.cuh"
#include "compress/payload_layout.hpp"

namespace {

using tern::compress::Codec;
using tern::compress::CodecKind;
using tern::compress::EncodeContext;
namespace gpu = tern::compress::cuda;

constexpr int kSkipCode = 77;

const char* const kSpecs[] = {"sign",
                              "sign:rms",
                              "qsgd:2",
                              "qsgd:4",
                              "qsgd:8",
                              "qsgd:4:32",
                              "qsgd:8:96",
                              "topk:0.01",
                              "topk:0.001",
                              "topk:0.05:exact",
                              "topk:0.3:exact:fp16",
                              "topk:0.01:fp16",
                              "fp16",
                              "bf16"};

// Device buffer owning its memory.
struct DeviceBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : bytes(n) { gpu::check(cudaMalloc(&ptr, n > 0 ? n : 1), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
};

void toDevice(void* dst, const void* src, size_t bytes) {
  if (bytes) gpu::check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "copy to device");
}
void toHost(void* dst, const void* src, size_t bytes) {
  if (bytes) gpu::check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "copy to host");
}

size_t elementBytes(ternDataType_t dtype) { return dtype == ternFloat32 ? 4 : 2; }

// Gradient-like input: normal values over 16 binades, with zeros, negative zeros and repeated values (ties).
std::vector<uint8_t> makeInput(size_t n, ternDataType_t dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint8_t> bytes(n * elementBytes(dtype));
  for (size_t i = 0; i < n; ++i) {
    float v = normal(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 16) - 8);
    if (rng() % 17 == 0) v = 0.0f;
    if (rng() % 19 == 0) v = -0.0f;
    if (rng() % 23 == 0) v = 0.5f;
    if (dtype == ternFloat32) {
      std::memcpy(bytes.data() + 4 * i, &v, 4);
    } else {
      uint16_t h = dtype == ternFloat16 ? tern::compress::floatToHalfBits(v) : tern::compress::floatToBf16Bits(v);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  return bytes;
}

struct Result {
  std::vector<uint8_t> payload;
  std::vector<float> residual, added, written;
};

size_t usedBytes(const Codec& codec, const std::vector<uint8_t>& payload) {
  if (codec.kind() != CodecKind::kTopK) return payload.size();
  uint32_t count;
  std::memcpy(&count, payload.data(), 4);
  return tern::compress::topkPayloadBytes(count, codec.params().topkFp16Values ? 2 : 4);
}

Result runCpu(const Codec& codec, const std::vector<uint8_t>& in, ternDataType_t dtype, size_t n,
              const std::vector<float>* residual, const EncodeContext& ctx) {
  Result r;
  r.payload.assign(codec.payloadBytes(n), 0);
  if (residual) r.residual = *residual;
  size_t bytes = codec.encode(in.data(), dtype, n, r.payload.data(), ctx, residual ? r.residual.data() : nullptr);
  r.payload.resize(bytes);
  r.added.assign(n, 0.25f);
  codec.decode(r.payload.data(), bytes, n, r.added.data(), true);
  r.written.assign(n, 7.0f);
  codec.decode(r.payload.data(), bytes, n, r.written.data(), false);
  return r;
}

Result runGpu(const Codec& codec, const std::vector<uint8_t>& in, ternDataType_t dtype, size_t n,
              const std::vector<float>* residual, const EncodeContext& ctx) {
  DeviceBuffer dIn(in.size()), dPayload(codec.payloadBytes(n)), dRes(n * 4), dOut(n * 4);
  const size_t wsBytes = gpu::workspaceBytes(codec, n);
  DeviceBuffer dWs(wsBytes);
  toDevice(dIn.ptr, in.data(), in.size());
  gpu::check(cudaMemset(dPayload.ptr, 0xcd, dPayload.bytes), "poison payload");
  if (residual) toDevice(dRes.ptr, residual->data(), n * 4);
  gpu::encode(codec, dIn.ptr, dtype, n, dPayload.ptr, ctx, residual ? dRes.as<float>() : nullptr, dWs.ptr, wsBytes,
              nullptr);
  Result r;
  r.payload.resize(codec.payloadBytes(n));
  toHost(r.payload.data(), dPayload.ptr, r.payload.size());
  r.payload.resize(usedBytes(codec, r.payload));
  if (residual) {
    r.residual.resize(n);
    toHost(r.residual.data(), dRes.ptr, n * 4);
  }
  r.added.assign(n, 0.25f);
  toDevice(dOut.ptr, r.added.data(), n * 4);
  gpu::decode(codec, dPayload.ptr, n, dOut.as<float>(), true, nullptr);
  toHost(r.added.data(), dOut.ptr, n * 4);
  r.written.assign(n, 7.0f);
  toDevice(dOut.ptr, r.written.data(), n * 4);
  gpu::decode(codec, dPayload.ptr, n, dOut.as<float>(), false, nullptr);
  toHost(r.written.data(), dOut.ptr, n * 4);
  gpu::check(cudaDeviceSynchronize(), "synchronize");
  return r;
}

// First differing position of two byte ranges, or -1.
long firstDiff(const void* a, const void* b, size_t bytes) {
  const auto* x = static_cast<const uint8_t*>(a);
  const auto* y = static_cast<const uint8_t*>(b);
  for (size_t i = 0; i < bytes; ++i) {
    if (x[i] != y[i]) return static_cast<long>(i);
  }
  return -1;
}

bool same(const char* what, const std::string& label, const void* cpu, size_t cpuBytes, const void* gpuData,
          size_t gpuBytes) {
  if (cpuBytes != gpuBytes) {
    std::printf("MISMATCH %s: %s size CPU %zu GPU %zu bytes\n", label.c_str(), what, cpuBytes, gpuBytes);
    return false;
  }
  long d = firstDiff(cpu, gpuData, cpuBytes);
  if (d >= 0) {
    std::printf("MISMATCH %s: %s differs first at byte %ld (CPU %02x GPU %02x)\n", label.c_str(), what, d,
                static_cast<const uint8_t*>(cpu)[d], static_cast<const uint8_t*>(gpuData)[d]);
    return false;
  }
  return true;
}

struct Options {
  bool quick = false;
  bool bench = true;
  size_t maxN = ~size_t{0};
  std::vector<size_t> sizes;  // overrides the built-in list
  std::string only;           // one codec spec
  size_t benchMib = 256;
  int iters = 20;
};

int correctness(const Options& opt) {
  std::vector<size_t> sizes = {0, 1, 31, 32, 33, 100, 1023, 1024, 1025, 4097, 65536 + 3, 300000};
  if (!opt.sizes.empty()) sizes = opt.sizes;
  const size_t maxN = opt.maxN;
  if (!opt.quick && opt.sizes.empty()) {
    sizes.push_back((size_t{1} << 20) + 17);
    sizes.push_back(3000000);
  }
  sizes.erase(std::remove_if(sizes.begin(), sizes.end(), [&](size_t n) { return n > maxN; }), sizes.end());
  const ternDataType_t dtypes[] = {ternFloat32, ternFloat16, ternBfloat16};
  int cases = 0, failures = 0;
  for (const char* spec : kSpecs) {
    if (!opt.only.empty() && opt.only != spec) continue;
    auto codec = tern::compress::makeCodec(spec);
    int specFailures = 0;
    for (ternDataType_t dtype : dtypes) {
      for (size_t n : sizes) {
        for (uint32_t seed : {1u, 2u}) {
          auto in = makeInput(n, dtype, seed * 7919u + static_cast<uint32_t>(n));
          std::vector<float> residual(n);
          std::mt19937 rng(seed);
          std::uniform_real_distribution<float> small(-0.05f, 0.05f);
          for (float& r : residual) r = small(rng);
          for (bool ef : {false, true}) {
            const EncodeContext ctx{seed, 100 + seed, ef ? 12345u : 0u};
            std::string label = std::string(spec) + " dtype=" + std::to_string(dtype) + " n=" + std::to_string(n) +
                                " seed=" + std::to_string(seed) + (ef ? " ef" : "");
            Result c = runCpu(*codec, in, dtype, n, ef ? &residual : nullptr, ctx);
            Result g = runGpu(*codec, in, dtype, n, ef ? &residual : nullptr, ctx);
            bool ok = same("payload", label, c.payload.data(), c.payload.size(), g.payload.data(), g.payload.size()) &&
                      same("residual", label, c.residual.data(), c.residual.size() * 4, g.residual.data(),
                           g.residual.size() * 4) &&
                      same("decode+=", label, c.added.data(), n * 4, g.added.data(), n * 4) &&
                      same("decode=", label, c.written.data(), n * 4, g.written.data(), n * 4);
            ++cases;
            if (!ok) ++specFailures;
          }
        }
      }
    }
    std::printf("%-22s %s\n", spec, specFailures == 0 ? "CPU == GPU" : "MISMATCHES");
    failures += specFailures;
  }
  std::printf("correctness: %d cases, %d mismatches\n", cases, failures);
  return failures;
}

// ---- throughput -----------------------------------------------------------------------------------------------

float timeMs(int iters, const std::function<void()>& body) {
  cudaEvent_t start, stop;
  gpu::check(cudaEventCreate(&start), "event");
  gpu::check(cudaEventCreate(&stop), "event");
  body();  // warm-up
  gpu::check(cudaEventRecord(start, nullptr), "event");
  for (int i = 0; i < iters; ++i) body();
  gpu::check(cudaEventRecord(stop, nullptr), "event");
  gpu::check(cudaEventSynchronize(stop), "event");
  float ms = 0;
  gpu::check(cudaEventElapsedTime(&ms, start, stop), "event");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / static_cast<float>(iters);
}

void bench(size_t mib, int iters) {
  const size_t n = mib * (size_t{1} << 20) / 4;
  const double gb = static_cast<double>(n) * 4 / 1e9;
  auto host = makeInput(n, ternFloat32, 5);
  DeviceBuffer x(n * 4), copy(n * 4), residual(n * 4), out(n * 4);
  toDevice(x.ptr, host.data(), n * 4);
  gpu::check(cudaMemset(residual.ptr, 0, n * 4), "memset");
  gpu::check(cudaMemset(out.ptr, 0, n * 4), "memset");
  const float copyMs = timeMs(
      iters, [&] { gpu::check(cudaMemcpyAsync(copy.ptr, x.ptr, n * 4, cudaMemcpyDeviceToDevice, nullptr), "copy"); });
  const double copyGBs = gb / (copyMs / 1e3);
  std::printf("\nGPU throughput, %zu MiB fp32 tensor (GB/s of fp32 data; device copy %.0f GB/s = 100%%)\n", mib,
              copyGBs);
  std::printf("%-22s %10s %6s %10s %6s %10s %6s %8s\n", "codec", "encode", "%copy", "encode+EF", "%copy", "decode",
              "%copy", "ratio");
  for (const char* spec : kSpecs) {
    auto codec = tern::compress::makeCodec(spec);
    DeviceBuffer payload(codec->payloadBytes(n));
    const size_t wsBytes = gpu::workspaceBytes(*codec, n);
    DeviceBuffer ws(wsBytes);
    uint64_t step = 0;
    auto enc = [&](float* r) {
      gpu::encode(*codec, x.ptr, ternFloat32, n, payload.ptr, {1, step++, 0}, r, ws.ptr, wsBytes, nullptr);
    };
    const float encMs = timeMs(iters, [&] { enc(nullptr); });
    const float efMs = timeMs(iters, [&] { enc(residual.as<float>()); });
    const float decMs = timeMs(iters, [&] { gpu::decode(*codec, payload.ptr, n, out.as<float>(), true, nullptr); });
    std::vector<uint8_t> head(8);
    toHost(head.data(), payload.ptr, 8);
    std::vector<uint8_t> sized(codec->payloadBytes(n));
    if (codec->kind() == CodecKind::kTopK) std::memcpy(sized.data(), head.data(), 8);
    const double ratio = static_cast<double>(n) * 4 / static_cast<double>(usedBytes(*codec, sized));
    auto rate = [&](float ms) { return gb / (ms / 1e3); };
    std::printf("%-22s %10.1f %5.0f%% %10.1f %5.0f%% %10.1f %5.0f%% %8.1f\n", spec, rate(encMs),
                100 * rate(encMs) / copyGBs, rate(efMs), 100 * rate(efMs) / copyGBs, rate(decMs),
                100 * rate(decMs) / copyGBs, ratio);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      opt.quick = true;
    } else if (a == "--no-bench") {
      opt.bench = false;
    } else if (a.rfind("--bench-mib=", 0) == 0) {
      opt.benchMib = std::stoull(a.substr(12));
    } else if (a.rfind("--max-n=", 0) == 0) {
      opt.maxN = std::stoull(a.substr(8));
    } else if (a.rfind("--sizes=", 0) == 0) {
      for (size_t pos = 8; pos < a.size();) {
        size_t end = a.find(',', pos);
        if (end == std::string::npos) end = a.size();
        opt.sizes.push_back(std::stoull(a.substr(pos, end - pos)));
        pos = end + 1;
      }
    } else if (a.rfind("--only=", 0) == 0) {
      opt.only = a.substr(7);
    } else if (a.rfind("--iters=", 0) == 0) {
      opt.iters = std::stoi(a.substr(8));
    } else {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--max-n=N] [--sizes=N,N,...] [--only=SPEC] [--no-bench] [--bench-mib=256] "
                   "[--iters=20]\n",
                   argv[0]);
      return 2;
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA device\n");
    return kSkipCode;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("device: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  try {
    int failures = correctness(opt);
    if (opt.bench) bench(opt.benchMib, opt.iters);
    if (failures) {
      std::printf("FAILED: %d GPU results differ from the CPU's\n", failures);
      return 1;
    }
    std::printf("PASSED: every GPU payload, residual and decode equals the CPU's bit for bit\n");
    return 0;
  } catch (const std::exception& e) {
    std::printf("FAILED: %s\n", e.what());
    return 1;
  }
}
