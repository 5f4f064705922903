// What the multi-process check programs (tests/mp/mp_check.cpp, tests/shm/shm_check.cpp) share: this process's
// rank, the CHECK/OK macros that end the process on the first failure, communicator setup from the launcher's
// environment, and the SIGKILL drill that tests/mp/kill_test.sh runs.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "tern/tern.h"

namespace rank_check {

inline int rank = 0, nranks = 1;

#define CHECK(cond, ...)                                                     \
  do {                                                                       \
    if (!(cond)) {                                                           \
      std::fprintf(stderr, "rank %d: FAILED %s: ", rank_check::rank, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                     \
      std::fprintf(stderr, "\n");                                            \
      std::exit(1);                                                          \
    }                                                                        \
  } while (0)

#define OK(call, comm) CHECK((call) == ternSuccess, "%s", ternGetLastError(comm))

// The communicator of a launched job (ternCommInitFromEnv), with rank and nranks set; exits on failure.
inline ternComm_t initFromEnv() {
  ternComm_t comm = nullptr;
  if (ternCommInitFromEnv(&comm, nullptr) != ternSuccess) {
    std::fprintf(stderr, "init failed: %s\n", ternGetLastError(nullptr));
    std::exit(1);
  }
  ternCommCount(comm, &nranks);
  ternCommUserRank(comm, &rank);
  return comm;
}

// Every rank loops over allreduces of countOf(i) floats (at most 8 Mi); the victim SIGKILLs itself in the middle
// of one, 700 ms in, after writing the time to stampFile. Survivors must fail (not hang) and print when they
// noticed, for kill_test.sh to compare. Returns the exit code: 0 when this rank saw the error.
template <typename CountOf>
int killDrill(ternComm_t comm, int victim, const char* stampFile, int iterations, CountOf countOf) {
  const size_t count = 8 << 20;
  std::vector<float> buf(count, 1.0f);
  if (rank == victim) {
    std::thread([stampFile] {
      std::this_thread::sleep_for(std::chrono::milliseconds(700));
      FILE* f = std::fopen(stampFile, "w");
      auto now = std::chrono::system_clock::now().time_since_epoch();
      std::fprintf(f, "%.6f\n", std::chrono::duration<double>(now).count());
      std::fclose(f);
      kill(getpid(), SIGKILL);
    }).detach();
  }
  for (int i = 0; i < iterations; ++i) {
    ternResult_t r = ternAllReduce(buf.data(), buf.data(), countOf(i), ternFloat32, ternSum, comm);
    if (r != ternSuccess) {
      auto now = std::chrono::system_clock::now().time_since_epoch();
      std::printf("rank %d: error at %.6f after %d iterations: %s: %s\n", rank,
                  std::chrono::duration<double>(now).count(), i, ternGetErrorString(r), ternGetLastError(comm));
      std::fflush(stdout);
      ternCommAbort(comm);
      return 0;
    }
  }
  std::printf("rank %d: never saw an error\n", rank);
  return 1;
}

}  // namespace rank_check
