// One process per rank under tools/tern-run: whether TERN_COMPRESS compressed an unmodified allreduce, which tells
// what the cost model made of the job topology (TERN_TOPO_FILE's NIC speeds) or learned from its first calls, and
// how long init took.
//
//   tern_topo_check compress compressed|exact
//   tern_topo_check learn CALLS exact|compressed
//
// learn: CALLS + 2 allreduces of 4 MiB whose sums bf16 cannot carry exactly (fractions below its precision); the
// first CALLS must be exact (the communicator times them), and the last two as the second word says (what the
// model decided with the network it learned from them). Two ranks: one fp32 addition per element, so an
// uncompressed result is bit-exact against the sum computed here.
//
// Every element of every rank is a small integer, so the exact sum is exact in fp32. A sign-compressed allreduce
// (1 bit per element and a scale per block) cannot reproduce sums that vary from element to element: most
// elements then differ. "compressed" expects that, "exact" expects every element equal to the true sum.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "mp/rank_check.hpp"
#include "tern/tern.h"

namespace {

float valueOf(size_t i, int rank) { return static_cast<float>(1 + (i * 7 + static_cast<size_t>(rank) * 3) % 11); }

int checkCompression(ternComm_t comm, const std::string& expect) {
  using rank_check::nranks;
  using rank_check::rank;
  const size_t count = size_t{1} << 20;  // 4 MiB: far above TERN_COMPRESS_MIN_BYTES
  std::vector<float> in(count), out(count, 0.0f);
  for (size_t i = 0; i < count; ++i) in[i] = valueOf(i, rank);
  OK(ternAllReduce(in.data(), out.data(), count, ternFloat32, ternSum, comm), comm);
  size_t differ = 0;
  for (size_t i = 0; i < count; ++i) {
    long long want = 0;
    for (int r = 0; r < nranks; ++r) want += static_cast<long long>(valueOf(i, r));
    if (out[i] != static_cast<float>(want)) ++differ;
  }
  if (expect == "exact") {
    CHECK(differ == 0, "%zu of %zu elements differ from the exact sum: the allreduce was compressed", differ, count);
  } else {
    CHECK(differ > count / 2, "only %zu of %zu elements differ from the exact sum: the allreduce was not compressed",
          differ, count);
  }
  std::printf("rank %d: allreduce %s (%zu of %zu elements differ from the exact sum)\n", rank, expect.c_str(), differ,
              count);
  return 0;
}

float fractionOf(size_t i, int rank) {
  return 1.0f + static_cast<float>((i * 13 + static_cast<size_t>(rank) * 5) % 97) / 1024.0f;
}

int checkLearning(ternComm_t comm, int calls, const std::string& expectAfter) {
  using rank_check::nranks;
  using rank_check::rank;
  CHECK(nranks == 2, "learn needs 2 ranks, not %d", nranks);
  const size_t count = size_t{1} << 20;
  std::vector<float> in(count), out(count, 0.0f), want(count);
  for (size_t i = 0; i < count; ++i) {
    in[i] = fractionOf(i, rank);
    want[i] = fractionOf(i, 0) + fractionOf(i, 1);
  }
  for (int call = 1; call <= calls + 2; ++call) {
    OK(ternAllReduce(in.data(), out.data(), count, ternFloat32, ternSum, comm), comm);
    size_t differ = 0;
    for (size_t i = 0; i < count; ++i) differ += out[i] != want[i] ? 1 : 0;
    const std::string expect = call <= calls ? "exact" : expectAfter;
    const bool compressed = differ > count / 4;
    CHECK(compressed == (expect == "compressed"), "call %d: %zu of %zu elements differ from the exact sum: expected %s",
          call, differ, count, expect.c_str());
    std::printf("rank %d: call %d %s (%zu of %zu elements differ)\n", rank, call, expect.c_str(), differ, count);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if ((mode != "compress" || argc < 3) && (mode != "learn" || argc < 4)) {
    std::fprintf(stderr,
                 "usage: tern_topo_check compress compressed|exact\n"
                 "       tern_topo_check learn CALLS exact|compressed\n");
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  ternComm_t comm = rank_check::initFromEnv();
  const double initMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("rank %d: init %.1f ms\n", rank_check::rank, initMs);
  const int rc = mode == "learn" ? checkLearning(comm, std::atoi(argv[2]), argv[3]) : checkCompression(comm, argv[2]);
  ternCommDestroy(comm);
  return rc;
}
