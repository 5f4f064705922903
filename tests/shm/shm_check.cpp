// Multi-process checks of the shared-memory path, one process per rank under tools/tern-run (or started directly
// by kill_test.sh). Prints one line per check, exits non-zero on the first failure.
//   - The collectives matrix (tests/mp/collectives_matrix.hpp: every collective, datatype and op, every element
//     against tests/common/reference.hpp, identical bits on every rank), on ordinary and on registered
//     (ternMemAlloc) buffers, over counts that cross the shared-memory algorithms' boundaries: 0, 1, 7, 1023, 5000
//     (one-phase small area or staged, by rank count), 70000 (staged pipeline, several chunks) and 2^20+3 (CMA for
//     ordinary buffers, the one-pass mapped allreduce for registered ones). From 70000 on, `--large` chooses the
//     subset (default: every datatype once per collective), for the reasons that header gives.
//   - Reused large buffers (the huge-page advisor at work under the CMA paths) and registered buffers past the
//     streaming-store threshold, on inexact float data checked against a rank-order fold (see fvalue).
//   - Point-to-point messages of every size class (ring, multi-slot, cross-memory-attach rendezvous), every byte.
//   - The SIGKILL drill (kill_test.sh).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mp/collectives_matrix.hpp"
#include "mp/rank_check.hpp"
#include "tern/tern.h"
#include "tern/tern_ext.h"

namespace {

using rank_check::nranks;
using rank_check::rank;

using collectives_matrix::Buffer;

// Rank r's input element i: not exact in float (sums round), so only a rank-order fold matches, which is what the
// shared-memory algorithms promise (each element reduced by one rank, in rank order: pipelined_allreduce.cpp,
// mapped_allreduce.cpp, cma_allreduce.cpp) and, on such data, more than tests/common/reference.hpp's single
// rounding can state. The matrix checks every dtype and op on exact data.
float fvalue(int r, size_t i) { return static_cast<float>((r * 7919 + i * 104729) % 4099) / 64.0f - 31.3f; }

// got[i] must be the rank-order float sum of every rank's fvalue(rank + shift, i), bit for bit.
void checkFloatSum(const float* got, size_t count, int shift, const std::string& what) {
  for (size_t i = 0; i < count; ++i) {
    float want = fvalue(shift, i);
    for (int r = 1; r < nranks; ++r) want += fvalue(r + shift, i);
    CHECK(std::memcmp(&got[i], &want, 4) == 0, "%s, i %zu: got %a want %a", what.c_str(), i, got[i], want);
  }
}

// A training loop's pattern: the same large ordinary buffers allreduced, allgathered and broadcast again and again
// with new contents. From the second call on, the cross-memory-attach paths turn their pages into huge pages
// (huge_page_advisor.hpp) while peers read and write them; every call must still be exact, in and out of place, on
// 2 MiB-aligned buffers (whole huge pages) and on malloc's (partly covered regions).
void checkReusedLargeBuffers(ternComm_t comm) {
  const size_t count = (size_t{2} << 20) + 5;  // 8 MiB of float32: inside the CMA range
  const size_t part = count / 4;               // allgathered per rank: 2 MiB
  const size_t bytes = count * sizeof(float), gatheredBytes = part * nranks * sizeof(float);
  for (bool aligned : {true, false}) {
    auto allocate = [&](size_t n) {
      const size_t huge = size_t{2} << 20;
      return static_cast<float*>(aligned ? std::aligned_alloc(huge, (n + huge - 1) / huge * huge) : std::malloc(n));
    };
    float* in = allocate(bytes);
    float* out = allocate(bytes);
    float* gathered = allocate(gatheredBytes);
    CHECK(in != nullptr && out != nullptr && gathered != nullptr, "allocating %zu bytes", bytes);
    const std::string kind = aligned ? "2 MiB-aligned" : "malloc";
    for (int call = 0; call < 4; ++call) {
      const bool inPlace = call == 3;
      float* dst = inPlace ? in : out;
      for (size_t i = 0; i < count; ++i) in[i] = fvalue(rank + call, i);
      OK(ternAllGather(in, gathered, part, ternFloat32, comm), comm);
      for (int r = 0; r < nranks; ++r) {
        for (size_t i = 0; i < part; ++i) {
          CHECK(gathered[r * part + i] == fvalue(r + call, i), "allgather of reused %s buffers, call %d, rank %d i %zu",
                kind.c_str(), call, r, i);
        }
      }
      const int root = call % nranks;
      OK(ternBroadcast(in, out, count, ternFloat32, root, comm), comm);
      for (size_t i = 0; i < count; ++i) {
        CHECK(out[i] == fvalue(root + call, i), "broadcast of reused %s buffers, call %d, i %zu", kind.c_str(), call,
              i);
      }
      OK(ternAllReduce(in, dst, count, ternFloat32, ternSum, comm), comm);
      checkFloatSum(dst, count, call, "allreduce of reused " + kind + " buffers, call " + std::to_string(call));
    }
    std::free(in);
    std::free(out);
    std::free(gathered);
  }
}

// Registered buffers past kMappedStreamingBytes: the one-pass allreduce writes the peers' outputs with streaming
// stores out of place and ordinary ones in place; both must be exact.
void checkLargeRegistered(ternComm_t comm) {
  const size_t count = (size_t{5} << 20) + 3;  // 20 MiB of float32
  Buffer inBuffer(count * 4, true), outBuffer(count * 4, true);
  float* in = reinterpret_cast<float*>(inBuffer.data());
  float* out = reinterpret_cast<float*>(outBuffer.data());
  for (bool inPlace : {false, true}) {
    float* dst = inPlace ? in : out;
    for (size_t i = 0; i < count; ++i) in[i] = fvalue(rank, i);
    OK(ternAllReduce(in, dst, count, ternFloat32, ternSum, comm), comm);
    checkFloatSum(dst, count, 0, std::string("large registered allreduce ") + (inPlace ? "in place" : "out of place"));
  }
}

void checkCollectives(ternComm_t comm, collectives_matrix::LargeCount large) {
  for (bool registered : {false, true}) {
    collectives_matrix::Options options;
    options.counts = {0, 1, 7, 1023, 5000, 70000, (size_t{1} << 20) + 3};
    options.large = large;
    options.largeFrom = 65536;
    options.registered = registered;
    collectives_matrix::run(comm, options);
  }
  checkReusedLargeBuffers(comm);
  checkLargeRegistered(comm);
  OK(ternBarrier(comm), comm);
  std::printf("rank %d: collectives OK (transport %s)\n", rank, ternCommTransportName(comm));
}

// Every rank sends messages of every size class to the next rank and receives from the previous one; every byte
// is checked (noise, so no shift of a message's bytes can pass).
void checkPointToPoint(ternComm_t comm) {
  const size_t sizes[] = {0, 1, 32704, 32705, 300000, 4u << 20, (9u << 20) + 5};
  const size_t messages = sizeof(sizes) / sizeof(sizes[0]);
  const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  const auto seedOf = [](int r, size_t m) { return static_cast<uint64_t>(r) * 1000 + m; };
  for (bool reg : {false, true}) {
    std::vector<Buffer> sends, recvs;
    OK(ternGroupStart(), comm);
    for (size_t m = 0; m < messages; ++m) {
      sends.emplace_back(sizes[m], reg);
      recvs.emplace_back(sizes[m], reg);
      collectives_matrix::fillNoise(sends[m].data(), sizes[m], seedOf(rank, m));
      collectives_matrix::fillNoise(recvs[m].data(), sizes[m], ~seedOf(rank, m));
    }
    for (size_t m = 0; m < messages; ++m) {
      OK(ternSend(sends[m].data(), sizes[m], ternUint8, next, comm), comm);
      OK(ternRecv(recvs[m].data(), sizes[m], ternUint8, prev, comm), comm);
    }
    OK(ternGroupEnd(), comm);
    for (size_t m = 0; m < messages; ++m) {
      std::vector<char> want(sizes[m] + 1);
      collectives_matrix::fillNoise(want.data(), sizes[m], seedOf(prev, m));
      for (size_t i = 0; i < sizes[m]; ++i) {
        CHECK(recvs[m].data()[i] == want[i], "message %zu (%zu bytes%s) byte %zu", m, sizes[m],
              reg ? ", ternMemAlloc" : "", i);
      }
    }
  }
  std::printf("rank %d: point-to-point OK\n", rank);
}

}  // namespace

//   tern_shm_check [all|collectives|p2p] [--large full|subset|lean|none]
//   tern_shm_check kill VICTIM STAMP_FILE          (kill_test.sh)
int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "all";
  using collectives_matrix::LargeCount;
  LargeCount large = LargeCount::kSubset;
  if (mode != "kill" && !collectives_matrix::parseLargeOption(argc, argv, 2, "all|collectives|p2p", &large)) {
    return 2;
  }
  ternComm_t comm = rank_check::initFromEnv();
  CHECK(std::string(ternCommTransportName(comm)) == "shm+tcp", "transport is %s, not shm+tcp",
        ternCommTransportName(comm));
  if (mode == "kill") {
    // Alternate small and large calls so the kill lands in either algorithm.
    return rank_check::killDrill(comm, std::atoi(argv[2]), argv[3], 1000000,
                                 [](int i) { return i % 2 ? size_t{8} << 20 : size_t{16}; });
  }
  if (mode == "all" || mode == "collectives") checkCollectives(comm, large);
  if (mode == "all" || mode == "p2p") checkPointToPoint(comm);
  ternCommDestroy(comm);
  return 0;
}
