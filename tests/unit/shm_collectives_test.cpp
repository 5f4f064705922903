// The direct shared-memory collectives (src/transport/shm), with ranks as threads over TCP loopback: the threads
// share a host id, so every collective with every rank on the host takes the shared-memory path.
//
// Every collective x datatypes x ops x counts {0, 1, 7, 1023, 2^20 + 3} x in/out-of-place x ordinary/registered
// (ternMemAlloc) buffers, for 2, 3, 4 and 8 ranks, in each zero-copy mode (same-process peers read in place; all
// staged; registered buffers mapped through /proc/self/fd). Inputs are arbitrary (not exact-valued) numbers: the
// direct algorithms reduce every element in rank order, so the result must equal, bit for bit, the reference that
// folds the ranks' inputs in rank order with the scalar kernel, on every rank.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/dtype.hpp"
#include "kernels/reduce.hpp"
#include "rank_threads.hpp"
#include "tern/tern_ext.h"
#include "transport/shm/direct_collectives.hpp"
#include "transport/shm/stream_copy.hpp"

namespace tern {
namespace {

using shm::ZeroCopyMode;
using testing::runOnRanks;
using testing::Wire;

enum class Coll { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kReduce };
const char* collName(Coll c) {
  static const char* names[] = {"AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce"};
  return names[static_cast<int>(c)];
}
bool reduces(Coll c) { return c == Coll::kAllReduce || c == Coll::kReduceScatter || c == Coll::kReduce; }

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

// Rank r's input: arbitrary bits for integers; for floating types values in [-16, 16) with a fractional part, so
// sums round (the test relies on the order of reduction, not on exactness); prod inputs stay near 1 so products
// neither overflow nor underflow much.
template <typename T, typename Convert>
void fillWith(void* buf, size_t count, uint64_t seed, Convert convert) {
  T* p = static_cast<T*>(buf);
  for (size_t i = 0; i < count; ++i) p[i] = convert(mix(seed + i));
}

float floatInput(uint64_t h, ternRedOp_t op) {
  if (op == ternProd) return 0.75f + static_cast<float>(h & 1023) / 2048.0f;
  return static_cast<float>(static_cast<int>(h & 4095) - 2048) / 128.0f + static_cast<float>((h >> 12) & 7) * 1e-3f;
}

// Elements [first, first + count) of rank r's input.
void fillInput(void* buf, size_t count, size_t first, int r, ternDataType_t dt, ternRedOp_t op) {
  uint64_t seed = (static_cast<uint64_t>(r) << 40 ^ static_cast<uint64_t>(dt) << 56) + first;
  auto f = [op](uint64_t h) { return floatInput(h, op); };
  switch (dt) {
    case ternInt8:
    case ternUint8:
      fillWith<uint8_t>(buf, count, seed, [](uint64_t h) { return static_cast<uint8_t>(h); });
      break;
    case ternInt32:
    case ternUint32:
      fillWith<uint32_t>(buf, count, seed, [](uint64_t h) { return static_cast<uint32_t>(h); });
      break;
    case ternInt64:
    case ternUint64:
      fillWith<uint64_t>(buf, count, seed, [](uint64_t h) { return h; });
      break;
    case ternFloat16:
      fillWith<uint16_t>(buf, count, seed, [&](uint64_t h) { return floatToHalf(f(h)); });
      break;
    case ternBfloat16:
      fillWith<uint16_t>(buf, count, seed, [&](uint64_t h) { return floatToBfloat16(f(h)); });
      break;
    case ternFloat32:
      fillWith<float>(buf, count, seed, f);
      break;
    case ternFloat64:
      fillWith<double>(buf, count, seed, [&](uint64_t h) { return f(h) + 1e-9 * (h >> 60); });
      break;
    default:
      break;
  }
}

struct Case {
  Coll coll;
  ternDataType_t dt;
  ternRedOp_t op;
  size_t count;
  bool inPlace;
  bool registered;

  std::string name() const {
    return std::string(collName(coll)) + " " + dataTypeName(dt) + " " + redOpName(op) + " count " +
           std::to_string(count) + (inPlace ? " in-place" : " out-of-place") + (registered ? " registered" : "");
  }
};

std::vector<char> rankInput(int r, size_t elems, ternDataType_t dt, ternRedOp_t op) {
  std::vector<char> b(elems * dataTypeSize(dt));
  fillInput(b.data(), elems, 0, r, dt, op);
  return b;
}

// Elements [first, first + count) of the reference output of c on n ranks, into dst. For reduce-scatter it is the
// fold of the whole inputs (rank r checks block r of it); for allgather, the concatenated inputs. Reductions fold the
// ranks' inputs in rank order with the scalar kernel.
void referencePart(const Case& c, int n, size_t first, size_t count, char* dst) {
  const size_t e = dataTypeSize(c.dt);
  switch (c.coll) {
    case Coll::kAllReduce:
    case Coll::kReduce:
    case Coll::kReduceScatter: {
      std::vector<char> in(count * e);
      for (int r = 0; r < n; ++r) {
        fillInput(r == 0 ? dst : in.data(), count, first, r, c.dt, c.op);
        if (r > 0) reduceScalar(dst, dst, in.data(), count, c.dt, c.op);
      }
      if (c.op == ternAvg && count > 0) finalizeAverage(dst, count, c.dt, n);
      break;
    }
    case Coll::kAllGather:
      for (size_t i = first; i < first + count;) {  // element i of the output is element i % count of rank i / count
        int r = static_cast<int>(i / c.count);
        size_t k = std::min(first + count, (r + 1) * c.count) - i;
        fillInput(dst + (i - first) * e, k, i - r * c.count, r, c.dt, c.op);
        i += k;
      }
      break;
    case Coll::kBroadcast:
      fillInput(dst, count, first, n - 1, c.dt, c.op);
      break;
  }
}

// A buffer from ternMemAlloc or from the heap.
struct Buffer {
  char* p = nullptr;
  bool registered = false;
  Buffer(size_t bytes, bool reg) : registered(reg) {
    bytes = std::max<size_t>(bytes, 64);
    if (reg) {
      void* v = nullptr;
      EXPECT_EQ(ternMemAlloc(&v, bytes), ternSuccess);
      p = static_cast<char*>(v);
    } else {
      p = new char[bytes];
    }
    std::memset(p, 0x5a, bytes);
  }
  ~Buffer() {
    if (registered) {
      ternMemFree(p);
    } else {
      delete[] p;
    }
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

// Runs c on every rank (comm of n ranks, this is rank r) and checks this rank's output against the reference.
void runCase(const Case& c, ternComm_t comm, int r, int n, std::vector<char>* expected) {
  const size_t e = dataTypeSize(c.dt);
  const int root = n - 1;  // not 0, to catch "root 0" assumptions
  size_t inElems = c.coll == Coll::kReduceScatter ? c.count * n : c.count;
  size_t outElems = c.coll == Coll::kAllGather ? c.count * n : c.count;
  std::vector<char> in = rankInput(r, inElems, c.dt, c.op);
  Buffer inBuf(inElems * e, c.registered), outBuf(outElems * e, c.registered);
  ternResult_t res = ternSuccess;
  char* result = outBuf.p;
  switch (c.coll) {
    case Coll::kAllReduce:
      if (c.inPlace) {
        std::memcpy(outBuf.p, in.data(), in.size());
        res = ternAllReduce(outBuf.p, outBuf.p, c.count, c.dt, c.op, comm);
      } else {
        std::memcpy(inBuf.p, in.data(), in.size());
        res = ternAllReduce(inBuf.p, outBuf.p, c.count, c.dt, c.op, comm);
      }
      break;
    case Coll::kReduceScatter:
      std::memcpy(inBuf.p, in.data(), in.size());
      if (c.inPlace) {
        result = inBuf.p + r * c.count * e;
        res = ternReduceScatter(inBuf.p, result, c.count, c.dt, c.op, comm);
      } else {
        res = ternReduceScatter(inBuf.p, outBuf.p, c.count, c.dt, c.op, comm);
      }
      break;
    case Coll::kAllGather:
      if (c.inPlace) {
        std::memcpy(outBuf.p + r * c.count * e, in.data(), in.size());
        res = ternAllGather(outBuf.p + r * c.count * e, outBuf.p, c.count, c.dt, comm);
      } else {
        std::memcpy(inBuf.p, in.data(), in.size());
        res = ternAllGather(inBuf.p, outBuf.p, c.count, c.dt, comm);
      }
      break;
    case Coll::kBroadcast:
      if (c.inPlace) {
        if (r == root) std::memcpy(outBuf.p, in.data(), in.size());
        res = ternBroadcast(outBuf.p, outBuf.p, c.count, c.dt, root, comm);
      } else {
        std::memcpy(inBuf.p, in.data(), in.size());
        res = ternBroadcast(r == root ? inBuf.p : nullptr, outBuf.p, c.count, c.dt, root, comm);
      }
      break;
    case Coll::kReduce:
      if (c.inPlace && r == root) {
        std::memcpy(outBuf.p, in.data(), in.size());
        res = ternReduce(outBuf.p, outBuf.p, c.count, c.dt, c.op, root, comm);
      } else {
        std::memcpy(inBuf.p, in.data(), in.size());
        res = ternReduce(inBuf.p, r == root ? outBuf.p : nullptr, c.count, c.dt, c.op, root, comm);
      }
      break;
  }
  ASSERT_EQ(res, ternSuccess) << c.name() << " rank " << r << ": " << ternGetLastError(comm);

  // The reference: small cases are cheap enough for every rank to compute its own; large ones are computed once, in
  // parts by every rank, between barriers, into the shared vector.
  const bool shared = c.count > 4096;
  const size_t total =
      (c.coll == Coll::kAllReduce || c.coll == Coll::kReduce || c.coll == Coll::kBroadcast) ? c.count : c.count * n;
  std::vector<char> local;
  std::vector<char>& want = shared ? *expected : local;
  if (shared) {
    if (r == 0) expected->assign(total * e, 0);
    ASSERT_EQ(ternBarrier(comm), ternSuccess);
    size_t lo = total * r / n, hi = total * (r + 1) / n;
    referencePart(c, n, lo, hi - lo, want.data() + lo * e);
    ASSERT_EQ(ternBarrier(comm), ternSuccess);
  } else {
    want.assign(total * e, 0);
    referencePart(c, n, 0, total, want.data());
  }
  if (c.coll != Coll::kReduce || r == root) {
    const char* w = want.data() + (c.coll == Coll::kReduceScatter ? r * c.count * e : 0);
    ASSERT_GE(want.size(), outElems * e);
    if (outElems > 0 && std::memcmp(result, w, outElems * e) != 0) {
      size_t bad = 0;
      while (result[bad] == w[bad]) ++bad;
      ADD_FAILURE() << c.name() << " on " << n << " ranks: rank " << r << " differs from the reference at byte " << bad
                    << " (element " << bad / e << ")";
    }
  }
  // Rank 0 must not overwrite the shared reference while a peer still compares.
  if (shared) {
    ASSERT_EQ(ternBarrier(comm), ternSuccess);
  }
}

// Every case for n ranks. In the registered-mapping mode, ordinary buffers behave as in the staged mode, so only
// registered ones are run.
std::vector<Case> cases(int n, ZeroCopyMode mode) {
  const std::vector<bool> kinds =
      mode == ZeroCopyMode::kRegisteredOnly ? std::vector<bool>{true} : std::vector<bool>{false, true};
  std::vector<Case> out;
  const ternDataType_t allTypes[] = {ternInt8,   ternUint8,   ternInt32,   ternUint32,  ternInt64,
                                     ternUint64, ternFloat16, ternFloat32, ternFloat64, ternBfloat16};
  const ternRedOp_t allOps[] = {ternSum, ternProd, ternMax, ternMin, ternAvg};
  const size_t big = (size_t{1} << 20) + 3;
  for (Coll coll : {Coll::kAllReduce, Coll::kReduceScatter, Coll::kAllGather, Coll::kBroadcast, Coll::kReduce}) {
    std::vector<std::pair<ternDataType_t, ternRedOp_t>> combos;
    for (ternDataType_t dt : allTypes) combos.emplace_back(dt, ternSum);
    if (reduces(coll)) {
      for (ternDataType_t dt : {ternFloat32, ternInt32}) {
        for (ternRedOp_t op : allOps) {
          if (op != ternSum) combos.emplace_back(dt, op);
        }
      }
    }
    for (auto [dt, op] : combos) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}}) {
        for (bool inPlace : {false, true}) {
          for (bool registered : kinds) out.push_back({coll, dt, op, count, inPlace, registered});
        }
      }
    }
    // The pipelined path at 2^20 + 3 elements. Buffer kinds only matter in the registered-mapping mode (threads
    // read each other's ordinary buffers in the zero-copy mode, and nothing is read in place in the staged one), so
    // each mode runs one kind. Every allreduce op on float32 (and avg on int32, fp16 sum: the 2-byte kernels) up
    // to 3 ranks; beyond, where every case costs more, sum and avg.
    std::vector<std::pair<ternDataType_t, ternRedOp_t>> bigCombos = {{ternFloat32, ternSum}};
    if (coll == Coll::kAllReduce) {
      bigCombos.emplace_back(ternFloat32, ternAvg);
      bigCombos.emplace_back(ternFloat16, ternSum);
      if (n <= 3) {
        for (ternRedOp_t op : {ternProd, ternMax, ternMin}) bigCombos.emplace_back(ternFloat32, op);
        bigCombos.emplace_back(ternInt32, ternAvg);
      }
    }
    const bool registered = mode == ZeroCopyMode::kRegisteredOnly;
    for (auto [dt, op] : bigCombos) {
      for (bool inPlace : {false, true}) {
        // Reduce-scatter and allgather move n times the count per rank: at 8 ranks, one placement each.
        if (n >= 8 && (coll == Coll::kReduceScatter || coll == Coll::kAllGather) && inPlace != registered) continue;
        out.push_back({coll, dt, op, big, inPlace, registered});
      }
    }
  }
  return out;
}

class ShmCollectives : public ::testing::TestWithParam<std::tuple<int, ZeroCopyMode>> {
 protected:
  void TearDown() override {
    shm::setZeroCopyModeForTesting(ZeroCopyMode::kAuto);
    shm::setStreamingOutputBytesForTesting(8u << 20);
  }
};

TEST_P(ShmCollectives, MatchReferenceBitForBit) {
  auto [n, mode] = GetParam();
  shm::setZeroCopyModeForTesting(mode);
  // The staged runs also cover the streaming-store output path (normally only for outputs of many MiB).
  if (mode == ZeroCopyMode::kStagedOnly) shm::setStreamingOutputBytesForTesting(0);
  std::vector<Case> all = cases(n, mode);
  std::vector<char> expected;
  // A failed rank leaves its peers waiting in a barrier: a short timeout turns that into errors, not a stuck test.
  ternConfig_t config = TERN_CONFIG_INITIALIZER;
  config.timeoutMs = 30000;
  runOnRanks(
      n, Wire::kTcp,
      [&](ternComm_t comm, int r) {
        EXPECT_STREQ(ternCommTransportName(comm), "shm+tcp");
        for (const Case& c : all) {
          runCase(c, comm, r, n, &expected);
          if (::testing::Test::HasFatalFailure()) return;
        }
      },
      &config);
}

std::string modeName(ZeroCopyMode m) {
  switch (m) {
    case ZeroCopyMode::kAuto:
      return "SameProcessZeroCopy";
    case ZeroCopyMode::kStagedOnly:
      return "Staged";
    default:
      return "RegisteredMapped";
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, ShmCollectives,
                         ::testing::Combine(::testing::Values(2, 3, 4, 8),
                                            ::testing::Values(ZeroCopyMode::kAuto, ZeroCopyMode::kStagedOnly,
                                                              ZeroCopyMode::kRegisteredOnly)),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "Ranks" + modeName(std::get<1>(info.param));
                         });

// The algorithm names the planner and perf JSON see.
TEST(ShmCollectivesQuery, NamesDirectAlgorithms) {
  runOnRanks(2, Wire::kTcp, [&](ternComm_t comm, int) {
    char name[64];
    double us = 0;
    ASSERT_EQ(ternQueryAlgorithm(comm, "allreduce", 16, ternFloat32, name, sizeof(name), &us), ternSuccess);
    EXPECT_STREQ(name, "shm_direct_small");
    ASSERT_EQ(ternQueryAlgorithm(comm, "allreduce", 1 << 20, ternFloat32, name, sizeof(name), &us), ternSuccess);
    EXPECT_STREQ(name, "shm_direct");
    ASSERT_EQ(ternQueryAlgorithm(comm, "alltoall", 1 << 20, ternFloat32, name, sizeof(name), &us), ternSuccess);
    EXPECT_STRNE(name, "shm_direct");
  });
}

}  // namespace
}  // namespace tern
