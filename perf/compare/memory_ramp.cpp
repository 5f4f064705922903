// How long memory-bound work runs slow after the CPU idled: one thread copies a buffer into another and reads the
// copy back, pass after pass, and prints the median time of each group of passes; first right after sleeping, then
// again on the same (now warm) buffers with no pause.
//
// Why: a short benchmark run (nccl-tests' -n 10 -w 1) starts its first large sizes right after the job's setup,
// most of which waits. Where the host lowers clocks when a CPU idles (a VM's vCPU halts; a core or its memory fabric
// drops to a lower power state) the first tens of milliseconds of memory-bound work run slower whatever library
// does it, and a long run's warm-up absorbs what a short run measures. This tells that effect from a library's own
// first-call costs: no collective, no second process, no shared memory.
//
//   memory_ramp [--bytes 2097152] [--passes 300] [--group 20] [--idle-ms 2000]
// prints "# memory ramp: 2097152 B per pass, medians of 20 passes (us)", then "after idle 2000 ms: ..." and
// "warm: ...".
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// One pass: copy src into dst, then read dst back a byte per cache line (so the copy cannot be skipped).
double passMicros(std::vector<unsigned char>& src, std::vector<unsigned char>& dst) {
  const auto start = Clock::now();
  std::memcpy(dst.data(), src.data(), src.size());
  unsigned sum = 0;
  for (size_t i = 0; i < dst.size(); i += 64) sum += dst[i];
  src[0] = static_cast<unsigned char>(sum);
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

std::string groupMedians(std::vector<unsigned char>& src, std::vector<unsigned char>& dst, int passes, int group) {
  std::vector<double> times;
  times.reserve(static_cast<size_t>(passes));
  for (int i = 0; i < passes; ++i) times.push_back(passMicros(src, dst));
  std::string out;
  for (size_t at = 0; at < times.size(); at += static_cast<size_t>(group)) {
    std::vector<double> g(times.begin() + static_cast<std::ptrdiff_t>(at),
                          times.begin() + static_cast<std::ptrdiff_t>(std::min(times.size(), at + group)));
    std::nth_element(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(g.size() / 2), g.end());
    char cell[32];
    std::snprintf(cell, sizeof cell, " %.0f", g[g.size() / 2]);
    out += cell;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"memory-bound passes right after idle and once warm"};
  size_t bytes = size_t{2} << 20;
  int passes = 300;
  int group = 20;
  int idleMs = 2000;
  app.add_option("--bytes", bytes, "bytes copied per pass")->check(CLI::Range(size_t{64}, size_t{1} << 32));
  app.add_option("--passes", passes, "passes per phase")->check(CLI::Range(1, 1000000));
  app.add_option("--group", group, "passes per printed median")->check(CLI::Range(1, 1000000));
  app.add_option("--idle-ms", idleMs, "sleep before the first phase")->check(CLI::Range(0, 600000));
  CLI11_PARSE(app, argc, argv);

  try {
    // Touched before the sleep, so that the first phase pays no page faults: what it measures is the idle alone.
    std::vector<unsigned char> src(bytes, 1);
    std::vector<unsigned char> dst(bytes, 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(idleMs));
    const std::string afterIdle = groupMedians(src, dst, passes, group);
    const std::string warm = groupMedians(src, dst, passes, group);
    std::printf("# memory ramp: %zu B per pass, medians of %d passes (us)\n", bytes, group);
    std::printf("after idle %d ms:%s\n", idleMs, afterIdle.c_str());
    std::printf("warm:%s\n", warm.c_str());
  } catch (const std::exception& e) {  // two buffers of --bytes may not fit
    std::fprintf(stderr, "memory_ramp: %s\n", e.what());
    return 1;
  }
  return 0;
}
