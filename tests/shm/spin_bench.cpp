// spin_bench: what spin budget the shared-memory waits (src/transport/shm/flag_wait.*) should use on this machine.
//
// P processes run an all-to-all flag barrier many times, the synchronisation pattern of a direct collective: each
// posts its counter (shm::publish, the library's protocol) and waits for every other rank's counter, spinning up to
// a budget before sleeping on the futex. Optionally each iteration first does W microseconds of work (a chunk's
// copy/reduce), ranks can be bound to CPUs (rank % ncpus), and -c applies the library's co-location rule (no spin
// when the awaited rank last posted from this CPU; sched_yield instead), and -y Y polls with sched_yield for up to Y
// microseconds after the spin before sleeping (the library's policy when ranks outnumber CPUs). Prints microseconds
// per barrier per budget.
//
//   spin_bench [-p ranks] [-w work_us] [-n iters] [-b] [-c] [-y yield_us] [spin_us ...]
//   (default budgets: 0 1 2 5 10 20 50 100)
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "transport/shm/futex.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using tern::shm::cpuRelax;
using tern::shm::futexWait;
using tern::shm::publish;
using tern::shm::reached;

struct alignas(64) Flag {
  std::atomic<uint32_t> value;
  std::atomic<int32_t> cpu;
};

bool colocationRule = false;
double yieldPollUs = 0;
struct alignas(64) Waiters {
  std::atomic<uint32_t> count;
};

void busy(double us) {
  auto end = Clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(us * 1000));
  while (Clock::now() < end) cpuRelax();
}

// The library's wait, minus the liveness checks: spin up to spinUs, then sleep on the futex.
void waitFor(Flag& f, Waiters& w, uint32_t target, double spinUs) {
  if (reached(f.value.load(std::memory_order_acquire), target)) return;
  if (colocationRule && f.cpu.load(std::memory_order_relaxed) == sched_getcpu()) {
    spinUs = 0;
    for (int i = 0; i < 4; ++i) {
      sched_yield();
      if (reached(f.value.load(std::memory_order_acquire), target)) return;
    }
  }
  auto end = Clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(spinUs * 1000));
  while (Clock::now() < end) {
    for (int i = 0; i < 16; ++i) {
      cpuRelax();
      if (reached(f.value.load(std::memory_order_acquire), target)) return;
    }
  }
  if (yieldPollUs > 0) {
    const auto yieldEnd = Clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(yieldPollUs * 1000));
    do {
      sched_yield();
      if (reached(f.value.load(std::memory_order_acquire), target)) return;
    } while (Clock::now() < yieldEnd);
  }
  for (;;) {
    w.count.fetch_add(1, std::memory_order_seq_cst);
    uint32_t v = f.value.load(std::memory_order_seq_cst);
    if (!reached(v, target)) futexWait(&f.value, v, 10000);
    w.count.fetch_sub(1, std::memory_order_release);
    if (reached(f.value.load(std::memory_order_acquire), target)) return;
  }
}

double run(int p, double spinUs, double workUs, int iters, bool bind) {
  size_t bytes = 4096 + sizeof(double) * 64;
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  std::memset(mem, 0, bytes);
  auto* flags = static_cast<Flag*>(mem);
  auto* waiters = reinterpret_cast<Waiters*>(static_cast<char*>(mem) + 64 * 32);
  auto* result = reinterpret_cast<double*>(static_cast<char*>(mem) + 4096);
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  std::vector<pid_t> pids;
  for (int r = 0; r < p; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      if (bind) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(r % ncpu, &set);
        sched_setaffinity(0, sizeof(set), &set);
      }
      auto start = Clock::now();
      for (int k = 1; k <= iters; ++k) {
        if (workUs > 0) busy(workUs);
        flags[r].cpu.store(sched_getcpu(), std::memory_order_relaxed);
        publish(flags[r].value, static_cast<uint32_t>(k), waiters[r].count);
        for (int i = 1; i < p; ++i) {
          int q = (r + i) % p;
          waitFor(flags[q], waiters[q], static_cast<uint32_t>(k), spinUs);
        }
      }
      result[r] = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iters;
      _exit(0);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) waitpid(pid, nullptr, 0);
  double worst = 0;
  for (int r = 0; r < p; ++r) worst = std::max(worst, result[r]);
  munmap(mem, bytes);
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  int p = 2, iters = 20000;
  double workUs = 0;
  bool bind = false;
  std::vector<double> budgets;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "-p") && i + 1 < argc) {
      p = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "-w") && i + 1 < argc) {
      workUs = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "-n") && i + 1 < argc) {
      iters = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "-b")) {
      bind = true;
    } else if (!std::strcmp(argv[i], "-c")) {
      colocationRule = true;
    } else if (!std::strcmp(argv[i], "-y") && i + 1 < argc) {
      yieldPollUs = std::atof(argv[++i]);
    } else {
      budgets.push_back(std::atof(argv[i]));
    }
  }
  if (budgets.empty()) budgets = {0, 1, 2, 5, 10, 20, 50, 100};
  std::printf("# %d ranks on %ld cpus%s%s, yield poll %.0f us, %.1f us work per iteration, %d iterations\n", p,
              sysconf(_SC_NPROCESSORS_ONLN), bind ? " (bound)" : "", colocationRule ? ", co-location rule" : "",
              yieldPollUs, workUs, iters);
  std::printf("# %10s %14s %14s\n", "spin(us)", "us/iteration", "sync(us)");
  for (double b : budgets) {
    double us = run(p, b, workUs, iters, bind);
    std::printf("  %10.1f %14.2f %14.2f\n", b, us, us - workUs);
    std::fflush(stdout);
  }
  return 0;
}
