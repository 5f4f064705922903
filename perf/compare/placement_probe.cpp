// The cache-line round trip between two CPUs: two threads, one pinned to each, hand an atomic flag back and forth.
//
// Why the comparison scripts print it before each run: on a VM the host decides where the vCPUs run, and moves them.
// When the two CPUs share a cache a line crosses between them in well under 100 ns; when they do not (on an AMD EPYC
// host, two core complexes) it takes several hundred, and every shared-memory transfer that crosses twice per line
// (staging through a buffer) slows several-fold while one that crosses once (a kernel copy) does not. A run's number
// means little without knowing which placement it ran in; this says, in a few milliseconds.
//
//   placement_probe [--cpus 0,1] [--round-trips 20000]
// prints "# placement: cache-line round trip CPU 0 <-> CPU 1: 82.3 ns" (or why it could not measure).
#include <pthread.h>
#include <sched.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

void pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cache-line round trip between two CPUs"};
  std::vector<int> cpus{0, 1};
  int roundTrips = 20000;
  app.add_option("--cpus", cpus, "the two CPUs")->delimiter(',')->expected(2);
  app.add_option("--round-trips", roundTrips, "hand-offs there and back")->check(CLI::Range(1, 100000000));
  CLI11_PARSE(app, argc, argv);

  // Both CPUs must be ours: two spinning threads sharing one CPU would hand the flag over once per time slice.
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || cpus[0] == cpus[1] || cpus[0] < 0 || cpus[1] < 0 ||
      cpus[0] >= CPU_SETSIZE || cpus[1] >= CPU_SETSIZE || !CPU_ISSET(cpus[0], &allowed) ||
      !CPU_ISSET(cpus[1], &allowed)) {
    std::printf("# placement: CPUs %d and %d are not two CPUs this process may use; not measured\n", cpus[0], cpus[1]);
    return 1;
  }
  alignas(64) std::atomic<int> flag{0};
  std::thread peer([&] {
    pinTo(cpus[1]);
    for (int i = 0; i < roundTrips; ++i) {
      while (flag.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      flag.store(2 * i + 2, std::memory_order_release);
    }
  });
  pinTo(cpus[0]);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < roundTrips; ++i) {
    flag.store(2 * i + 1, std::memory_order_release);
    while (flag.load(std::memory_order_acquire) != 2 * i + 2) {
    }
  }
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  peer.join();
  std::printf("# placement: cache-line round trip CPU %d <-> CPU %d: %.1f ns\n", cpus[0], cpus[1],
              took.count() / roundTrips);
  return 0;
}
