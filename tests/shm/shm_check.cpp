// Multi-process checks of the shared-memory path, one process per rank under tools/tern-run (or started directly
// by kill_test.sh): every direct collective on ordinary and registered (ternMemAlloc) buffers, in and out of place,
// checked on every rank against a reference computed locally; point-to-point messages of every size class (ring,
// multi-slot, cross-memory-attach rendezvous); and the SIGKILL drill. Prints one line per check, exits non-zero on
// the first failure.
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

#include "mp/rank_check.hpp"
#include "tern/tern.h"
#include "tern/tern_ext.h"

namespace {

using rank_check::nranks;
using rank_check::rank;

// Rank r's input element i: not exact in float (sums round), so only rank-order reduction matches the reference.
float fvalue(int r, size_t i) { return static_cast<float>((r * 7919 + i * 104729) % 4099) / 64.0f - 31.3f; }
int32_t ivalue(int r, size_t i) { return static_cast<int32_t>((r * 2654435761u) ^ (i * 40503u)); }

// A buffer from ternMemAlloc or the heap.
struct Buffer {
  char* p = nullptr;
  bool registered;
  Buffer(size_t bytes, bool reg) : registered(reg) {
    bytes = std::max<size_t>(bytes, 64);
    if (reg) {
      void* v = nullptr;
      CHECK(ternMemAlloc(&v, bytes) == ternSuccess, "ternMemAlloc");
      p = static_cast<char*>(v);
    } else {
      p = static_cast<char*>(std::malloc(bytes));
    }
  }
  ~Buffer() {
    if (registered) {
      ternMemFree(p);
    } else {
      std::free(p);
    }
  }
  float* f() { return reinterpret_cast<float*>(p); }
  int32_t* i() { return reinterpret_cast<int32_t*>(p); }
};

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
  Buffer in(count * 4, true), out(count * 4, true);
  for (bool inPlace : {false, true}) {
    float* dst = inPlace ? in.f() : out.f();
    for (size_t i = 0; i < count; ++i) in.f()[i] = fvalue(rank, i);
    OK(ternAllReduce(in.p, dst, count, ternFloat32, ternSum, comm), comm);
    checkFloatSum(dst, count, 0, std::string("large registered allreduce ") + (inPlace ? "in place" : "out of place"));
  }
}

void checkCollectives(ternComm_t comm) {
  const size_t counts[] = {0, 1, 7, 1023, 5000, 70000, (size_t{1} << 20) + 3};
  for (bool reg : {false, true}) {
    for (size_t count : counts) {
      for (bool inPlace : {false, true}) {
        // allreduce, float sum: the rank-order fold.
        {
          Buffer in(count * 4, reg), out(count * 4, reg);
          float* dst = inPlace ? in.f() : out.f();
          for (size_t i = 0; i < count; ++i) in.f()[i] = fvalue(rank, i);
          OK(ternAllReduce(in.p, dst, count, ternFloat32, ternSum, comm), comm);
          checkFloatSum(dst, count, 0, "allreduce count " + std::to_string(count));
        }
        // reduce-scatter, int32 max.
        {
          Buffer in(count * nranks * 4, reg), out(count * 4, reg);
          for (size_t i = 0; i < count * nranks; ++i) in.i()[i] = ivalue(rank, i);
          int32_t* dst = inPlace ? in.i() + rank * count : out.i();
          OK(ternReduceScatter(in.p, dst, count, ternInt32, ternMax, comm), comm);
          for (size_t i = 0; i < count; ++i) {
            int32_t want = ivalue(0, rank * count + i);
            for (int r = 1; r < nranks; ++r) want = std::max(want, ivalue(r, rank * count + i));
            CHECK(dst[i] == want, "reducescatter count %zu i %zu", count, i);
          }
        }
        // allgather.
        {
          Buffer in(count * 4, reg), out(count * nranks * 4, reg);
          float* src = inPlace ? out.f() + rank * count : in.f();
          for (size_t i = 0; i < count; ++i) src[i] = fvalue(rank, i);
          OK(ternAllGather(src, out.p, count, ternFloat32, comm), comm);
          for (int r = 0; r < nranks; ++r) {
            for (size_t i = 0; i < count; ++i) CHECK(out.f()[r * count + i] == fvalue(r, i), "allgather %zu", count);
          }
        }
        // broadcast from the last rank, reduce (float avg) to rank 1 % n.
        {
          int root = nranks - 1;
          Buffer in(count * 4, reg), out(count * 4, reg);
          float* dst = inPlace ? in.f() : out.f();
          for (size_t i = 0; i < count; ++i) in.f()[i] = fvalue(rank, i);
          OK(ternBroadcast(in.p, dst, count, ternFloat32, root, comm), comm);
          for (size_t i = 0; i < count; ++i) CHECK(dst[i] == fvalue(root, i), "broadcast %zu", count);
          root = 1 % nranks;
          for (size_t i = 0; i < count; ++i) in.f()[i] = fvalue(rank, i);
          dst = inPlace && rank == root ? in.f() : out.f();
          OK(ternReduce(in.p, rank == root ? dst : nullptr, count, ternFloat32, ternAvg, root, comm), comm);
          if (rank == root) {
            for (size_t i = 0; i < count; ++i) {
              float want = fvalue(0, i);
              for (int r = 1; r < nranks; ++r) want += fvalue(r, i);
              want /= static_cast<float>(nranks);
              CHECK(std::memcmp(&dst[i], &want, 4) == 0, "reduce avg count %zu i %zu", count, i);
            }
          }
        }
      }
    }
  }
  checkReusedLargeBuffers(comm);
  checkLargeRegistered(comm);
  OK(ternBarrier(comm), comm);
  std::printf("rank %d: collectives OK (transport %s)\n", rank, ternCommTransportName(comm));
}

// Every rank sends messages of every size class to the next rank and receives from the previous one.
void checkPointToPoint(ternComm_t comm) {
  const size_t sizes[] = {0, 1, 32704, 32705, 300000, 4u << 20, (9u << 20) + 5};
  int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  for (bool reg : {false, true}) {
    std::vector<Buffer*> sends, recvs;
    OK(ternGroupStart(), comm);
    for (size_t m = 0; m < sizeof(sizes) / sizeof(sizes[0]); ++m) {
      sends.push_back(new Buffer(sizes[m], reg));
      recvs.push_back(new Buffer(sizes[m], reg));
      for (size_t i = 0; i < sizes[m]; ++i) sends[m]->p[i] = static_cast<char>(rank * 31 + m * 7 + i);
      ternSend(sends[m]->p, sizes[m], ternUint8, next, comm);
      ternRecv(recvs[m]->p, sizes[m], ternUint8, prev, comm);
    }
    OK(ternGroupEnd(), comm);
    for (size_t m = 0; m < sends.size(); ++m) {
      for (size_t i = 0; i < sizes[m]; ++i) {
        CHECK(recvs[m]->p[i] == static_cast<char>(prev * 31 + m * 7 + i), "message %zu byte %zu", m, i);
      }
      delete sends[m];
      delete recvs[m];
    }
  }
  std::printf("rank %d: point-to-point OK\n", rank);
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "all";
  ternComm_t comm = rank_check::initFromEnv();
  CHECK(std::string(ternCommTransportName(comm)) == "shm+tcp", "transport is %s, not shm+tcp",
        ternCommTransportName(comm));
  if (mode == "kill") {
    // Alternate small and large calls so the kill lands in either algorithm.
    return rank_check::killDrill(comm, std::atoi(argv[2]), argv[3], 1000000,
                                 [](int i) { return i % 2 ? size_t{8} << 20 : size_t{16}; });
  }
  if (mode == "all" || mode == "collectives") checkCollectives(comm);
  if (mode == "all" || mode == "p2p") checkPointToPoint(comm);
  ternCommDestroy(comm);
  return 0;
}
