// Bandwidth of the reduction kernels against memcpy on the same buffers. "traffic" counts every byte the kernel
// moves (reduce: 2 reads + 1 write; memcpy: 1 read + 1 write), so both are memory bandwidth and the fp32 sum,
// which is memory bound, should come close to memcpy on arrays far larger than the caches.
//
//   reduce_bench                            # every ISA this CPU supports
//   reduce_bench --benchmark_filter=fp32    # Google Benchmark flags apply
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/dtype.hpp"
#include "kernels/reduce.hpp"
#include "kernels/reduce_dispatch.hpp"

namespace {

constexpr size_t kLargeBytes = size_t{64} << 20;   // Per array: 192 MiB in all, beyond L2 and most L3s.
constexpr size_t kSmallBytes = size_t{256} << 10;  // Per array: three of them stay in L2.

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// Three page-touched, 64-byte aligned arrays of kLargeBytes, shared by all benchmarks so that page faults are
// paid once, outside the timings. Filled with small normal numbers of every dtype's width (no NaN, no subnormal:
// subnormal inputs take microcode assists on x86 and would measure something else).
struct Buffers {
  std::unique_ptr<unsigned char, FreeDeleter> a, b, dst;
  Buffers() {
    for (auto* p : {&a, &b, &dst}) {
      p->reset(static_cast<unsigned char*>(std::aligned_alloc(64, kLargeBytes)));
      if (!*p) {
        std::fprintf(stderr, "reduce_bench: out of memory\n");
        std::exit(1);
      }
    }
    // 0x3c 0x3c...: fp16 1.0-ish, bf16/fp32/fp64 ~0.01, ordinary integers.
    std::memset(a.get(), 0x3c, kLargeBytes);
    std::memset(b.get(), 0x3b, kLargeBytes);
    std::memset(dst.get(), 0, kLargeBytes);
  }
};

Buffers& buffers() {
  static Buffers instance;
  return instance;
}

// Shown as e.g. "13.5G/s" (decimal units) in the "traffic" column. Rates are per second of the benchmark thread's
// CPU time (Google Benchmark's default), which stays meaningful when other processes share the cores; add
// --benchmark_repetitions=5 for medians.
void setCounters(benchmark::State& state, size_t bytesPerIteration) {
  state.counters["traffic"] =
      benchmark::Counter(static_cast<double>(bytesPerIteration) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void memcpyBench(benchmark::State& state, size_t bytes) {
  Buffers& buf = buffers();
  for (auto _ : state) {
    std::memcpy(buf.dst.get(), buf.a.get(), bytes);
    benchmark::ClobberMemory();
  }
  setCounters(state, 2 * bytes);
}

void reduceBench(benchmark::State& state, std::string isa, ternDataType_t dtype, ternRedOp_t op, size_t bytes,
                 bool inPlace) {
  if (isa != tern::setReduceIsaForTesting(isa.c_str())) {
    state.SkipWithError("ISA not supported by this CPU");
    return;
  }
  Buffers& buf = buffers();
  const size_t count = bytes / tern::dataTypeSize(dtype);
  void* dst = inPlace ? buf.a.get() : buf.dst.get();
  for (auto _ : state) {
    tern::reduce(dst, buf.a.get(), buf.b.get(), count, dtype, op);
    benchmark::ClobberMemory();
  }
  // In place, repeated sums grow the values; restore the inputs for the next benchmark.
  if (inPlace) std::memset(buf.a.get(), 0x3c, kLargeBytes);
  tern::setReduceIsaForTesting(nullptr);
  setCounters(state, 3 * bytes);
}

std::string sizeName(size_t bytes) {
  return bytes >= (size_t{1} << 20) ? std::to_string(bytes >> 20) + "MiB" : std::to_string(bytes >> 10) + "KiB";
}

// Wraps the console output and keeps each benchmark's GB/s (its median with --benchmark_repetitions) for the
// summary at the end.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  // A display reporter passed in gets no color setting from --benchmark_color; color only on a terminal.
  SummaryReporter() : ConsoleReporter(isatty(STDOUT_FILENO) ? OO_ColorTabular : OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      const auto it = run.counters.find("traffic");
      if (run.error_occurred || it == run.counters.end()) continue;
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (median || run.run_type == Run::RT_Iteration) gbps_[run.run_name.function_name] = it->second.value * 1e-9;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  double gbps(const std::string& name) const {
    const auto it = gbps_.find(name);
    return it == gbps_.end() ? 0.0 : it->second;
  }

 private:
  std::map<std::string, double> gbps_;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> isas;
  for (const char* isa : {"scalar", "avx2", "avx512"}) {
    if (std::string(tern::setReduceIsaForTesting(isa)) == isa) isas.push_back(isa);
  }
  tern::setReduceIsaForTesting(nullptr);
  const std::string best = tern::reduceIsaName();
  const std::string large = sizeName(kLargeBytes);

  const std::string memcpyName = "memcpy/" + large;
  benchmark::RegisterBenchmark(memcpyName.c_str(), memcpyBench, kLargeBytes);
  std::vector<std::string> sumNames;
  for (const std::string& isa : isas) {
    for (bool inPlace : {false, true}) {
      const std::string name = "reduce/float/sum/" + isa + "/" + large + (inPlace ? "/inplace" : "");
      benchmark::RegisterBenchmark(name.c_str(), reduceBench, isa, ternFloat32, ternSum, kLargeBytes, inPlace);
      sumNames.push_back(name);
    }
  }
  // The other dtypes and ops on the best ISA, large (memory bound) and small (cache resident: compute bound).
  for (ternDataType_t dtype : {ternFloat16, ternBfloat16, ternFloat64, ternInt8, ternInt32, ternInt64}) {
    const std::string name = std::string("reduce/") + tern::dataTypeName(dtype) + "/sum/" + best + "/" + large;
    benchmark::RegisterBenchmark(name.c_str(), reduceBench, best, dtype, ternSum, kLargeBytes, false);
  }
  for (ternDataType_t dtype : {ternFloat32, ternFloat16, ternBfloat16, ternInt64}) {
    for (ternRedOp_t op : {ternSum, ternProd, ternMax}) {
      const std::string name = std::string("reduce/") + tern::dataTypeName(dtype) + "/" + tern::redOpName(op) + "/" +
                               best + "/" + sizeName(kSmallBytes);
      benchmark::RegisterBenchmark(name.c_str(), reduceBench, best, dtype, op, kSmallBytes, false);
    }
  }

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  const double memcpyGbps = reporter.gbps(memcpyName);
  std::printf("\nfloat32 sum vs memcpy (%s arrays, GB/s counts reads + writes):\n", large.c_str());
  std::printf("  %-40s %8.2f GB/s\n", memcpyName.c_str(), memcpyGbps);
  for (const std::string& name : sumNames) {
    const double gbps = reporter.gbps(name);
    if (gbps <= 0.0) continue;  // Filtered out or skipped.
    std::printf("  %-40s %8.2f GB/s  (%.0f%% of memcpy)\n", name.c_str(), gbps,
                memcpyGbps > 0.0 ? 100.0 * gbps / memcpyGbps : 0.0);
  }
  return 0;
}
