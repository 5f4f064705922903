// Multi-process checks, run one process per rank under tools/tern-run (or any launcher): the collectives matrix over
// whatever transport the job uses (TCP, UCX, ibverbs, shared memory + TCP on the simulated cluster), async overlap
// of two outstanding operations, Split, the failure drill used by kill_test.sh, and whether TERN_COMPRESS compresses
// where the cost model says it pays. Prints one line per check and exits non-zero on the first failure.
//
// The collectives matrix is tests/mp/collectives_matrix.hpp's (its header says what it checks); at 2^20+3 elements
// it runs the subset that `--large` names (default: every datatype once per collective).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "mp/collectives_matrix.hpp"
#include "mp/rank_check.hpp"
#include "tern/tern.h"

namespace {

using rank_check::nranks;
using rank_check::rank;

void checkCollectives(ternComm_t comm, collectives_matrix::LargeCount large) {
  collectives_matrix::Options options;
  options.large = large;
  collectives_matrix::run(comm, options);
  OK(ternBarrier(comm), comm);
  std::printf("rank %d: collectives OK\n", rank);
}

void checkAsyncOverlap(ternComm_t comm) {
  const size_t count = 4 << 20;
  std::vector<float> a(count, 1.0f), b(count, 2.0f);
  ternRequest_t ra = nullptr, rb = nullptr;
  OK(ternAllReduceAsync(a.data(), a.data(), count, ternFloat32, ternSum, comm, &ra), comm);
  OK(ternAllReduceAsync(b.data(), b.data(), count, ternFloat32, ternSum, comm, &rb), comm);
  // The caller is free while both are outstanding.
  volatile double busy = 0;
  for (int i = 0; i < 100000; ++i) busy = busy + i;
  OK(ternWait(rb), comm);
  OK(ternWait(ra), comm);
  for (size_t i = 0; i < count; ++i) {
    CHECK(a[i] == nranks && b[i] == 2.0f * nranks, "async results, element %zu: %g and %g", i, a[i], b[i]);
  }
  std::printf("rank %d: async overlap OK\n", rank);
}

void checkSplit(ternComm_t comm) {
  ternComm_t half = nullptr;
  OK(ternCommSplit(comm, rank % 2, rank, &half, nullptr), comm);
  int n = 0;
  ternCommCount(half, &n);
  CHECK(n == (nranks + 1 - rank % 2) / 2, "split size %d", n);
  int v = 1, s = 0;
  OK(ternAllReduce(&v, &s, 1, ternInt32, ternSum, half), half);
  CHECK(s == n, "split allreduce");
  ternCommDestroy(half);
  std::printf("rank %d: split OK\n", rank);
}

// TERN_COMPRESS=bf16 on an unmodified allreduce: 1 + 2^-12 is not a bf16 value, so a compressed sum (the first
// call: no residual yet) gives exactly nranks, an uncompressed one nranks * (1 + 2^-12). expect is "compressed" or
// "exact": whether the cost model should have found that compression pays on this job.
int checkDefaultCompression(ternComm_t comm, const std::string& expect) {
  const size_t count = size_t{1} << 20;
  const float x = 1.0f + 1.0f / 4096.0f;
  std::vector<float> in(count, x), out(count, 0.0f);
  OK(ternAllReduce(in.data(), out.data(), count, ternFloat32, ternSum, comm), comm);
  const float want = expect == "compressed" ? static_cast<float>(nranks) : static_cast<float>(nranks) * x;
  for (size_t i = 0; i < count; ++i) {
    CHECK(out[i] == want, "element %zu is %.9g, want %.9g (%s)", i, out[i], want, expect.c_str());
  }
  std::printf("rank %d: default compression %s OK\n", rank, expect.c_str());
  return 0;
}

}  // namespace

//   tern_mp_check [all|collectives|async|split] [--large full|subset|lean|none]
//   tern_mp_check kill VICTIM STAMP_FILE          (kill_test.sh)
//   tern_mp_check default-compress exact|compressed
int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "all";
  using collectives_matrix::LargeCount;
  LargeCount large = LargeCount::kSubset;
  if (mode != "kill" && mode != "default-compress" &&
      !collectives_matrix::parseLargeOption(argc, argv, 2, "all|collectives|async|split", &large)) {
    return 2;
  }
  ternComm_t comm = rank_check::initFromEnv();
  if (mode == "kill") {
    return rank_check::killDrill(comm, std::atoi(argv[2]), argv[3], 100000, [](int) { return size_t{8} << 20; });
  }
  if (mode == "default-compress") {
    const int rc = checkDefaultCompression(comm, argc > 2 ? argv[2] : "exact");
    ternCommDestroy(comm);
    return rc;
  }
  if (mode == "all" || mode == "collectives") checkCollectives(comm, large);
  if (mode == "all" || mode == "async") checkAsyncOverlap(comm);
  if (mode == "all" || mode == "split") checkSplit(comm);
  ternCommDestroy(comm);
  return 0;
}
