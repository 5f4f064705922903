// stream_add: this machine's single-thread streaming bandwidth, the ceiling for shared-memory collectives.
//
// A 2-rank shm allreduce is at heart c[i] = a[i] + b[i] over buffers it does not own in cache, so one core's
// streaming-add rate bounds what one rank can reduce. Reported STREAM-style: add counts 3 x bytes (read a, read b,
// write c), memcpy counts 2 x bytes. Several runs (>= 3) per size: the table gives the median run, as every benchmark
// here does, with the slowest and fastest add beside it (the fastest is the peak this core reached).
//
//   stream_add                       # 256 MiB arrays
//   stream_add -b 1M -e 256M -f 2    # per-size table (small sizes show cache, not DRAM, bandwidth)

#include <sys/mman.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "driver_common.hpp"

namespace {

using tern::compare::ParseBytes;

// Kept out of line so the compiler cannot merge repeated passes or hoist them out of the timing loop.
__attribute__((noinline)) void Add(float* __restrict c, const float* __restrict a, const float* __restrict b,
                                   size_t n) {
  for (size_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

float* AllocArray(size_t bytes) {
  // 2 MiB alignment lets THP back the arrays with huge pages, as a large collective buffer would typically be.
  const size_t align = size_t{2} << 20;
  const size_t rounded = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (p == nullptr) return nullptr;
  madvise(p, rounded, MADV_HUGEPAGE);
  return static_cast<float*>(p);
}

const char* Isa() {
#if defined(__AVX512F__)
  return "avx512";
#elif defined(__AVX2__)
  return "avx2";
#else
  return "sse2";
#endif
}

}  // namespace

int main(int argc, char** argv) {
  std::string min_str = "256M";
  std::string max_str = "256M";
  double factor = 2.0;
  int runs = 10;
  double min_run_ms = 20.0;
  std::string json;
  CLI::App app{"single-thread streaming add (c = a + b, float32) and memcpy bandwidth"};
  app.add_option("-b,--minbytes", min_str, "smallest array, bytes per array (K/M/G suffixes)")->capture_default_str();
  app.add_option("-e,--maxbytes", max_str, "largest array, bytes per array (K/M/G suffixes)")->capture_default_str();
  app.add_option("-f,--stepfactor", factor, "multiply the size by this each step")->capture_default_str();
  app.add_option("-r,--runs", runs, "runs per size (>= 3); the median is reported, with the extremes")
      ->capture_default_str()
      ->check(CLI::Range(3, 1000000));
  app.add_option("--min-run-ms", min_run_ms, "repeat the kernel within a run until it lasts this long")
      ->capture_default_str();
  app.add_option("-J,--json", json, "also write the rows as a JSON list");
  CLI11_PARSE(app, argc, argv);

  const auto min_bytes = ParseBytes(min_str);
  const auto max_bytes = ParseBytes(max_str);
  if (!min_bytes || !max_bytes || *min_bytes > *max_bytes || *min_bytes < sizeof(float) || factor <= 1.0 || runs < 1) {
    std::fprintf(stderr, "stream_add: bad arguments\n");
    return 2;
  }

  float* a = AllocArray(*max_bytes);
  float* b = AllocArray(*max_bytes);
  float* c = AllocArray(*max_bytes);
  if (a == nullptr || b == nullptr || c == nullptr) {
    std::fprintf(stderr, "stream_add: out of memory\n");
    return 1;
  }
  // First touch (and distinct values) before any timing so page faults are not measured.
  const size_t max_count = *max_bytes / sizeof(float);
  for (size_t i = 0; i < max_count; ++i) {
    a[i] = static_cast<float>(i & 1023);
    b[i] = 1.0f;
    c[i] = 0.0f;
  }

  std::printf("# stream_add: 1 thread, float32, %s build, median of %d runs (each >= %.0f ms)\n", Isa(), runs,
              min_run_ms);
  std::printf("# add counts 3 x size bytes (a, b read, c written); memcpy counts 2 x size bytes\n");
  std::printf("#       size    add(GB/s)  memcpy(GB/s)  add_slowest  add_fastest\n");

  struct Row {
    size_t bytes;
    double add;
    double copy;
    double add_min;
    double add_max;
  };
  // Seconds per call of the median run, and of the slowest and fastest.
  struct Timing {
    double median, slowest, fastest;
  };
  std::vector<Row> rows;
  for (size_t bytes = *min_bytes; bytes <= *max_bytes;) {
    const size_t count = bytes / sizeof(float);
    const size_t used = count * sizeof(float);
    // Times `kernel` over `runs` runs, each repeating it enough to last min_run_ms so small (cache resident) sizes
    // are not dominated by timer overhead. Returns seconds per kernel call.
    auto time_runs = [&](auto&& kernel) {
      size_t reps = 1;
      for (;;) {  // calibrate the repetition count once
        const auto t0 = std::chrono::steady_clock::now();
        for (size_t r = 0; r < reps; ++r) kernel();
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (ms >= min_run_ms || reps >= (size_t{1} << 30)) break;
        reps = ms <= 0 ? reps * 16 : std::max(reps * 2, static_cast<size_t>(reps * min_run_ms / ms * 1.1));
      }
      std::vector<double> per_call;
      for (int run = 0; run < runs; ++run) {
        const auto t0 = std::chrono::steady_clock::now();
        for (size_t r = 0; r < reps; ++r) {
          kernel();
          asm volatile("" ::: "memory");  // each pass must really happen
        }
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        per_call.push_back(s / static_cast<double>(reps));
      }
      std::sort(per_call.begin(), per_call.end());
      const size_t n = per_call.size();
      const double median = n % 2 ? per_call[n / 2] : (per_call[n / 2 - 1] + per_call[n / 2]) / 2;
      return Timing{median, per_call.back(), per_call.front()};
    };
    const Timing add_t = time_runs([&]() { Add(c, a, b, count); });
    // Guards against a miscompiled or elided kernel: the last pass must have left a + b behind.
    if (c[count - 1] != a[count - 1] + b[count - 1] || c[0] != a[0] + b[0]) {
      std::fprintf(stderr, "stream_add: kernel produced wrong values\n");
      return 1;
    }
    const Timing copy_t = time_runs([&]() { std::memcpy(c, a, used); });
    const double add_bytes = 3.0 * static_cast<double>(used) / 1e9;
    Row row{used, add_bytes / add_t.median, 2.0 * static_cast<double>(used) / 1e9 / copy_t.median,
            add_bytes / add_t.slowest, add_bytes / add_t.fastest};
    rows.push_back(row);
    std::printf("%12zu  %11.2f  %12.2f  %11.2f  %11.2f\n", row.bytes, row.add, row.copy, row.add_min, row.add_max);
    std::fflush(stdout);
    const size_t next = static_cast<size_t>(static_cast<double>(bytes) * factor);
    bytes = next > bytes ? next : bytes + 1;
  }

  if (!json.empty()) {
    if (FILE* f = std::fopen(json.c_str(), "w")) {
      std::fprintf(f, "[\n");
      for (size_t i = 0; i < rows.size(); ++i) {
        std::fprintf(f,
                     "  {\"size\": %zu, \"add_GBps\": %.3f, \"memcpy_GBps\": %.3f, \"add_slowest_GBps\": %.3f, "
                     "\"add_fastest_GBps\": %.3f}%s\n",
                     rows[i].bytes, rows[i].add, rows[i].copy, rows[i].add_min, rows[i].add_max,
                     i + 1 < rows.size() ? "," : "");
      }
      std::fprintf(f, "]\n");
      std::fclose(f);
    }
  }
  std::free(a);
  std::free(b);
  std::free(c);
  return 0;
}
