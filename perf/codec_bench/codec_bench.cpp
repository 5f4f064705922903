// Codec throughput: encode, encode with error feedback, and decode (accumulate) of every codec on a 64 MiB fp32
// tensor, one core, in GB/s of fp32 data and as a percentage of the memcpy bandwidth measured in the same run and
// the same way (memcpy of the same 64 MiB; a codec that reads its input once competes with that).
//
//   codec_bench [--isa=scalar|avx2|avx512] [--size_mib=64] [--real_time] [google benchmark flags]
//
// Times are the thread's CPU time by default, so that other processes on a shared machine do not count against the
// codec; --real_time uses wall-clock time for every benchmark, memcpy included.
//
// The summary table at the end lists the acceptance targets (fraction of memcpy) of the fast codecs. The numbers
// feed the constants in src/compress/codec_cost.cpp.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "compress/codec_factory.hpp"
#include "compress/error_feedback.hpp"
#include "compress/isa.hpp"

namespace {

using tern::compress::Codec;
using tern::compress::makeCodec;

size_t gElements = size_t{16} << 20;  // 64 MiB of fp32
double gMemcpyGBs = 0;  // memcpy bandwidth of this run (the memcpy benchmark), the reference of every percentage
bool gRealTime = false;

const char* const kSpecs[] = {"sign",      "sign:rms",        "qsgd:2", "qsgd:4", "qsgd:8",
                              "topk:0.01", "topk:0.01:exact", "fp16",   "bf16"};

// Acceptance targets: encode and decode throughput as a fraction of memcpy.
const std::map<std::string, double> kTargets = {{"sign", 0.5}, {"sign:rms", 0.5}, {"fp16", 0.5},
                                                {"bf16", 0.5}, {"qsgd:4", 0.3},   {"topk:0.01", 0.15}};

std::vector<float>& input() {
  static std::vector<float> x = [] {
    std::vector<float> v(gElements);
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& f : v) f = normal(rng);
    return v;
  }();
  return x;
}

// Rate counters print as "<value>/s": fp32_GB reads as GB/s of fp32 data.
void setCounters(benchmark::State& state) {
  const double gb = static_cast<double>(gElements * sizeof(float)) / 1e9;
  state.counters["fp32_GB"] = benchmark::Counter(gb, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Memcpy(benchmark::State& state) {
  const size_t bytes = gElements * sizeof(float);
  std::vector<char> out(bytes, 0);
  const auto& x = input();
  for (auto _ : state) {
    std::memcpy(out.data(), x.data(), bytes);
    benchmark::ClobberMemory();
  }
  setCounters(state);
}

void BM_Encode(benchmark::State& state, std::string spec, bool errorFeedback) {
  auto codec = makeCodec(spec);
  const auto& x = input();
  std::vector<uint8_t> payload(codec->payloadBytes(gElements), 0);
  tern::compress::ErrorFeedback ef(errorFeedback ? gElements : 0);
  uint64_t step = 0;
  size_t bytes = 0;
  for (auto _ : state) {
    tern::compress::EncodeContext ctx{1, step++, 0};
    bytes = errorFeedback ? ef.encode(*codec, x.data(), ternFloat32, gElements, payload.data(), ctx)
                          : codec->encode(x.data(), ternFloat32, gElements, payload.data(), ctx);
    benchmark::DoNotOptimize(payload.data());
    benchmark::ClobberMemory();
  }
  setCounters(state);
  state.counters["ratio"] = static_cast<double>(gElements * sizeof(float)) / static_cast<double>(bytes);
}

void BM_Decode(benchmark::State& state, std::string spec) {
  auto codec = makeCodec(spec);
  const auto& x = input();
  std::vector<uint8_t> payload(codec->payloadBytes(gElements));
  size_t bytes = codec->encode(x.data(), ternFloat32, gElements, payload.data(), {1, 0, 0});
  std::vector<float> out(gElements, 0.0f);
  for (auto _ : state) {
    codec->decode(payload.data(), bytes, gElements, out.data(), /*accumulate=*/true);
    benchmark::ClobberMemory();
  }
  setCounters(state);
}

// Collects GB/s per benchmark name for the summary table while printing the usual console output.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      auto it = r.counters.find("fp32_GB");
      if (it != r.counters.end() && r.run_type == Run::RT_Iteration && !r.error_occurred) {
        gbs_[r.run_name.function_name] = it->second.value;
      }
    }
  }
  double get(const std::string& name) const {
    auto it = gbs_.find(name);
    return it == gbs_.end() ? 0.0 : it->second;
  }

 private:
  std::map<std::string, double> gbs_;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--isa=", 0) == 0) {
      std::string isa = a.substr(6);
      tern::compress::setCodecIsa(isa == "scalar" ? tern::compress::CodecIsa::kScalar
                                  : isa == "avx2" ? tern::compress::CodecIsa::kAvx2
                                                  : tern::compress::CodecIsa::kAvx512);
    } else if (a == "--real_time") {
      gRealTime = true;
    } else if (a.rfind("--size_mib=", 0) == 0) {
      gElements = std::stoull(a.substr(11)) * (size_t{1} << 20) / sizeof(float);
    } else {
      rest.push_back(argv[i]);
    }
  }
  int restArgc = static_cast<int>(rest.size());
  benchmark::Initialize(&restArgc, rest.data());
  input();
  std::printf("codec_bench: %zu MiB fp32 tensors, ISA %s, %s time\n", gElements * sizeof(float) >> 20,
              tern::compress::codecIsaName(tern::compress::activeCodecIsa()), gRealTime ? "wall-clock" : "CPU");

  auto setup = [](benchmark::internal::Benchmark* b) {
    b->Unit(benchmark::kMillisecond);
    if (gRealTime) b->UseRealTime();
  };
  // memcpy always runs, first: the reference of every percentage.
  setup(benchmark::RegisterBenchmark("memcpy", BM_Memcpy));
  for (const char* spec : kSpecs) {
    setup(benchmark::RegisterBenchmark((std::string("encode/") + spec).c_str(), BM_Encode, std::string(spec), false));
    setup(benchmark::RegisterBenchmark((std::string("encode_ef/") + spec).c_str(), BM_Encode, std::string(spec), true));
    setup(benchmark::RegisterBenchmark((std::string("decode/") + spec).c_str(), BM_Decode, std::string(spec)));
  }
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  gMemcpyGBs = reporter.get("memcpy");
  if (gMemcpyGBs <= 0) {
    std::printf("memcpy was filtered out: no percentages (add memcpy to --benchmark_filter)\n");
    gMemcpyGBs = 1e-30;
  }

  std::printf("\n%-16s %10s %8s %10s %8s %10s %8s %8s  %s\n", "codec", "enc GB/s", "%mcpy", "encEF GB/s", "%mcpy",
              "dec GB/s", "%mcpy", "target", "verdict");
  std::printf("%-16s %10.2f %8.0f\n", "memcpy", gMemcpyGBs, 100.0);
  bool allMet = true;
  for (const char* spec : kSpecs) {
    double enc = reporter.get(std::string("encode/") + spec);
    double ef = reporter.get(std::string("encode_ef/") + spec);
    double dec = reporter.get(std::string("decode/") + spec);
    if (enc == 0 && dec == 0) continue;  // filtered out
    auto target = kTargets.find(spec);
    std::string verdict = "-";
    char targetText[16] = "-";
    if (target != kTargets.end()) {
      const double need = target->second * gMemcpyGBs;
      bool met = (enc <= 0 || enc >= need) && (dec <= 0 || dec >= need);  // filtered-out columns do not count
      allMet = allMet && met;
      verdict = met ? "met" : "MISSED";
      std::snprintf(targetText, sizeof targetText, ">=%.0f%%", 100 * target->second);
    }
    // Columns of benchmarks that were filtered out show as "-".
    auto cell = [](double gbs, double ref) {
      char buf[32];
      if (gbs <= 0) return std::string("         -        -");
      std::snprintf(buf, sizeof buf, "%10.2f %8.0f", gbs, 100 * gbs / ref);
      return std::string(buf);
    };
    std::printf("%-16s %s %s %s %8s  %s\n", spec, cell(enc, gMemcpyGBs).c_str(), cell(ef, gMemcpyGBs).c_str(),
                cell(dec, gMemcpyGBs).c_str(), targetText, verdict.c_str());
  }
  std::printf("targets (encode and decode vs memcpy %.2f GB/s): %s\n", gMemcpyGBs, allMet ? "all met" : "NOT all met");
  benchmark::Shutdown();
  return 0;
}
