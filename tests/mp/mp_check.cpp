// Multi-process checks, run one process per rank under tools/tern-run (or any launcher): every collective over the
// real TCP transport, async overlap of two outstanding operations, Split, and the failure drills used by
// kill_test.sh, and whether TERN_COMPRESS compresses where the cost model says it pays. Prints one line per check and
// exits non-zero on the first failure.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mp/rank_check.hpp"
#include "tern/tern.h"

namespace {

using rank_check::nranks;
using rank_check::rank;

float value(int r, size_t i) { return static_cast<float>((r * 7 + i * 13) % 11) - 5.0f; }

void checkCollectives(ternComm_t comm) {
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}, size_t{(1u << 20) + 3}}) {
    for (bool inPlace : {false, true}) {
      // allreduce
      std::vector<float> in(count), out(count);
      for (size_t i = 0; i < count; ++i) in[i] = value(rank, i);
      float* o = inPlace ? in.data() : out.data();
      OK(ternAllReduce(in.data(), o, count, ternFloat32, ternSum, comm), comm);
      for (size_t i = 0; i < count; ++i) {
        float want = 0;
        for (int r = 0; r < nranks; ++r) want += value(r, i);
        CHECK(o[i] == want, "allreduce count %zu i %zu got %g want %g", count, i, o[i], want);
      }
      // allgather
      std::vector<float> all(count * nranks);
      for (size_t i = 0; i < count; ++i) all[rank * count + i] = value(rank, i);
      std::vector<float> mine(all.begin() + rank * count, all.begin() + (rank + 1) * count);
      OK(ternAllGather(inPlace ? all.data() + rank * count : mine.data(), all.data(), count, ternFloat32, comm), comm);
      for (int r = 0; r < nranks; ++r) {
        for (size_t i = 0; i < count; i += 97) CHECK(all[r * count + i] == value(r, i), "allgather");
      }
      // reduce-scatter (max)
      std::vector<float> rsIn(count * nranks), rsOut(count);
      for (size_t i = 0; i < rsIn.size(); ++i) rsIn[i] = value(rank, i);
      float* rsDst = inPlace ? rsIn.data() + rank * count : rsOut.data();
      OK(ternReduceScatter(rsIn.data(), rsDst, count, ternFloat32, ternMax, comm), comm);
      for (size_t i = 0; i < count; i += 31) {
        float want = -1e9f;
        for (int r = 0; r < nranks; ++r) want = std::max(want, value(r, rank * count + i));
        CHECK(rsDst[i] == want, "reducescatter");
      }
      // broadcast from the last rank
      int root = nranks - 1;
      std::vector<float> b(count);
      if (rank == root) {
        for (size_t i = 0; i < count; ++i) b[i] = value(root, i);
      }
      OK(ternBroadcast(b.data(), b.data(), count, ternFloat32, root, comm), comm);
      for (size_t i = 0; i < count; i += 17) CHECK(b[i] == value(root, i), "broadcast");
      // reduce (int32 prod would overflow: use min) to rank 0
      std::vector<int32_t> ri(count), ro(count);
      for (size_t i = 0; i < count; ++i) ri[i] = static_cast<int32_t>(value(rank, i));
      OK(ternReduce(ri.data(), ro.data(), count, ternInt32, ternMin, 0, comm), comm);
      if (rank == 0) {
        for (size_t i = 0; i < count; i += 13) {
          int32_t want = 1 << 30;
          for (int r = 0; r < nranks; ++r) want = std::min(want, static_cast<int32_t>(value(r, i)));
          CHECK(ro[i] == want, "reduce");
        }
      }
      // alltoall
      std::vector<float> a2a(count * nranks), a2aOut(count * nranks);
      for (size_t i = 0; i < a2a.size(); ++i) a2a[i] = value(rank, i);
      float* a2aDst = inPlace ? a2a.data() : a2aOut.data();
      OK(ternAlltoAll(a2a.data(), a2aDst, count, ternFloat32, comm), comm);
      for (int r = 0; r < nranks; ++r) {
        for (size_t i = 0; i < count; i += 19) CHECK(a2aDst[r * count + i] == value(r, rank * count + i), "alltoall");
      }
    }
  }
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
  CHECK(a[count - 1] == nranks && b[0] == 2.0f * nranks, "async results");
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

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "all";
  ternComm_t comm = rank_check::initFromEnv();
  if (mode == "kill") {
    return rank_check::killDrill(comm, std::atoi(argv[2]), argv[3], 100000, [](int) { return size_t{8} << 20; });
  }
  if (mode == "default-compress") {
    const int rc = checkDefaultCompression(comm, argc > 2 ? argv[2] : "exact");
    ternCommDestroy(comm);
    return rc;
  }
  if (mode == "all" || mode == "collectives") checkCollectives(comm);
  if (mode == "all" || mode == "async") checkAsyncOverlap(comm);
  if (mode == "all" || mode == "split") checkSplit(comm);
  ternCommDestroy(comm);
  return 0;
}
