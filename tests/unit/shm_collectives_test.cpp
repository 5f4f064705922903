// The direct shared-memory collectives (src/algorithms/shm), with ranks as threads over TCP loopback: the threads
// share a host id, so every collective with every rank on the host takes the shared-memory path.
//
// Every collective x datatypes x ops x counts {0, 1, 7, 1023, 2^20 + 3} x in/out-of-place x ordinary/registered
// (ternMemAlloc) buffers, for 2, 3, 4 and 8 ranks, in each zero-copy mode (same-process peers read in place; all
// staged; registered buffers mapped through /proc/self/fd). Two kinds of input, both compared bit for bit on every
// rank:
// - exact: values for which every reduction order gives the same result (integers of every width with wrapping
//   sums, small integers for floats and for products), against the independent reference's reduceBuffer
//   (tests/common/reference.hpp);
// - rounding (floating types): arbitrary values, so sums and products round. The direct algorithms reduce every
//   element in rank order, so the result must equal the rank-order fold computed here step by step with the
//   rounding tern documents (fp16/bf16 widened to fp32, combined, rounded to nearest even with the reference's
//   own conversions).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/shm/direct_collectives.hpp"
#include "base/dtype.hpp"
#include "common/reference.hpp"
#include "rank_threads.hpp"
#include "tern/tern_ext.h"
#include "transport/shm/stream_copy.hpp"

namespace tern {
namespace {

// memcpy of a rank's input, which is empty for count 0 (memcpy's source must not be null even for 0 bytes).
template <typename Bytes>
void copyInput(char* dst, const Bytes& in) {
  if (!in.empty()) std::memcpy(dst, in.data(), in.size());
}

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

struct Case {
  Coll coll;
  ternDataType_t dt;
  ternRedOp_t op;
  size_t count;
  bool inPlace;
  bool registered;
  bool exact = true;  // exact inputs (any order gives the same result), else rounding ones (floating types)

  std::string name() const {
    return std::string(collName(coll)) + " " + dataTypeName(dt) + " " + redOpName(op) + " count " +
           std::to_string(count) + (inPlace ? " in-place" : " out-of-place") + (registered ? " registered" : "") +
           (exact ? " exact inputs" : " rounding inputs");
  }
};

// Element i of rank r's input for c, as a double the datatype holds exactly.
double inputValue(const Case& c, int r, size_t i) {
  const uint64_t h = mix((static_cast<uint64_t>(r) << 40 ^ static_cast<uint64_t>(c.dt) << 56) + i);
  const bool isSigned = ref::isSigned(c.dt);
  if (!ref::isFloating(c.dt)) {
    if (c.op == ternProd) {  // 1, 2, 3 (and -1): products wrap the 8-bit types, and stay exact in the reference
      static const double kFactors[] = {1, 2, 3, -1};
      return kFactors[h % (isSigned ? 4 : 3)];
    }
    switch (ref::elementSize(c.dt)) {  // arbitrary bits, so sums wrap; 64-bit ones below 2^49 (sums exact in double)
      case 1:
        return isSigned ? static_cast<double>(static_cast<int8_t>(h)) : static_cast<double>(static_cast<uint8_t>(h));
      case 4:
        return isSigned ? static_cast<double>(static_cast<int32_t>(h)) : static_cast<double>(static_cast<uint32_t>(h));
      default:
        return isSigned ? static_cast<double>(static_cast<int64_t>(h >> 15) - (int64_t{1} << 48))
                        : static_cast<double>(h >> 15);
    }
  }
  if (c.exact) {
    if (c.op == ternProd) {
      static const double kFactors[] = {1, -1, 2, 0.5};
      return kFactors[h % 4];
    }
    return static_cast<double>(static_cast<int>(h % 17) - 8);
  }
  // Values in [-16, 16) with a fractional part, so sums round; prod inputs near 1 so products neither overflow nor
  // underflow much.
  float f = c.op == ternProd ? 0.75f + static_cast<float>(h & 1023) / 2048.0f
                             : static_cast<float>(static_cast<int>(h & 4095) - 2048) / 128.0f +
                                   static_cast<float>((h >> 12) & 7) * 1e-3f;
  if (c.dt == ternFloat64) return static_cast<double>(f) + 1e-9 * static_cast<double>(h >> 60);
  char one[8];  // rounded to the datatype (fp16/bf16 by the reference's conversion)
  ref::store(one, 0, c.dt, f);
  return ref::load(one, 0, c.dt);
}

// Elements [first, first + count) of rank r's input.
void fillInput(const Case& c, void* buf, size_t count, size_t first, int r) {
  for (size_t i = 0; i < count; ++i) ref::store(buf, i, c.dt, inputValue(c, r, first + i));
}

// a op b for a floating datatype, rounded the way one reduction step of tern is documented to round.
double combineRounded(ternDataType_t dt, ternRedOp_t op, double a, double b) {
  if (op == ternMax) return b > a ? b : a;  // the inputs hold no NaN and no -0
  if (op == ternMin) return b < a ? b : a;
  if (dt == ternFloat64) return op == ternProd ? a * b : a + b;
  const auto x = static_cast<float>(a), y = static_cast<float>(b);
  const float r = op == ternProd ? x * y : x + y;
  char one[8];
  ref::store(one, 0, dt, r);
  return ref::load(one, 0, dt);
}

// The rounding inputs' reference: rank 0's element, combined with rank 1's, ..., each step rounded; avg divides
// the folded sum once (in fp32 for fp16/bf16/fp32).
double foldInRankOrder(const Case& c, int n, size_t i) {
  double acc = inputValue(c, 0, i);
  for (int r = 1; r < n; ++r) acc = combineRounded(c.dt, c.op, acc, inputValue(c, r, i));
  if (c.op != ternAvg) return acc;
  if (c.dt == ternFloat64) return acc / n;
  return static_cast<float>(acc) / static_cast<float>(n);
}

std::vector<char> rankInput(const Case& c, int r, size_t elems) {
  std::vector<char> b(elems * ref::elementSize(c.dt));
  fillInput(c, b.data(), elems, 0, r);
  return b;
}

// Elements [first, first + count) of the reference output of c on n ranks, into dst. For reduce-scatter it is the
// reduction of the whole inputs (rank r checks block r of it); for allgather, the concatenated inputs.
void referencePart(const Case& c, int n, size_t first, size_t count, char* dst) {
  switch (c.coll) {
    case Coll::kAllReduce:
    case Coll::kReduce:
    case Coll::kReduceScatter:
      if (c.exact) {
        const std::vector<char> part =
            ref::reduceBuffer(n, count, first, c.dt, c.op, [&](int r, size_t i) { return inputValue(c, r, i); });
        if (!part.empty()) std::memcpy(dst, part.data(), part.size());
      } else {
        for (size_t i = 0; i < count; ++i) ref::store(dst, i, c.dt, foldInRankOrder(c, n, first + i));
      }
      break;
    case Coll::kAllGather:
      for (size_t i = 0; i < count; ++i) {  // element j of the output is element j % count of rank j / count
        const size_t j = first + i;
        ref::store(dst, i, c.dt, inputValue(c, static_cast<int>(j / c.count), j % c.count));
      }
      break;
    case Coll::kBroadcast:
      fillInput(c, dst, count, first, n - 1);
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
  const size_t e = ref::elementSize(c.dt);
  const int root = n - 1;  // not 0, to catch "root 0" assumptions
  size_t inElems = c.coll == Coll::kReduceScatter ? c.count * n : c.count;
  size_t outElems = c.coll == Coll::kAllGather ? c.count * n : c.count;
  std::vector<char> in = rankInput(c, r, inElems);
  Buffer inBuf(inElems * e, c.registered), outBuf(outElems * e, c.registered);
  ternResult_t res = ternSuccess;
  char* result = outBuf.p;
  switch (c.coll) {
    case Coll::kAllReduce:
      if (c.inPlace) {
        copyInput(outBuf.p, in);
        res = ternAllReduce(outBuf.p, outBuf.p, c.count, c.dt, c.op, comm);
      } else {
        copyInput(inBuf.p, in);
        res = ternAllReduce(inBuf.p, outBuf.p, c.count, c.dt, c.op, comm);
      }
      break;
    case Coll::kReduceScatter:
      copyInput(inBuf.p, in);
      if (c.inPlace) {
        result = inBuf.p + r * c.count * e;
        res = ternReduceScatter(inBuf.p, result, c.count, c.dt, c.op, comm);
      } else {
        res = ternReduceScatter(inBuf.p, outBuf.p, c.count, c.dt, c.op, comm);
      }
      break;
    case Coll::kAllGather:
      if (c.inPlace) {
        copyInput(outBuf.p + r * c.count * e, in);
        res = ternAllGather(outBuf.p + r * c.count * e, outBuf.p, c.count, c.dt, comm);
      } else {
        copyInput(inBuf.p, in);
        res = ternAllGather(inBuf.p, outBuf.p, c.count, c.dt, comm);
      }
      break;
    case Coll::kBroadcast:
      if (c.inPlace) {
        if (r == root) copyInput(outBuf.p, in);
        res = ternBroadcast(outBuf.p, outBuf.p, c.count, c.dt, root, comm);
      } else {
        copyInput(inBuf.p, in);
        res = ternBroadcast(r == root ? inBuf.p : nullptr, outBuf.p, c.count, c.dt, root, comm);
      }
      break;
    case Coll::kReduce:
      if (c.inPlace && r == root) {
        copyInput(outBuf.p, in);
        res = ternReduce(outBuf.p, outBuf.p, c.count, c.dt, c.op, root, comm);
      } else {
        copyInput(inBuf.p, in);
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
      // Rounding inputs only where they make a difference: floating-point reductions.
      const std::vector<bool> inputKinds =
          reduces(coll) && ref::isFloating(dt) ? std::vector<bool>{true, false} : std::vector<bool>{true};
      for (bool exact : inputKinds) {
        for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}}) {
          for (bool inPlace : {false, true}) {
            for (bool registered : kinds) out.push_back({coll, dt, op, count, inPlace, registered, exact});
          }
        }
      }
    }
    // The pipelined path at 2^20 + 3 elements. Buffer kinds only matter in the registered-mapping mode (threads
    // read each other's ordinary buffers in the zero-copy mode, and nothing is read in place in the staged one), so
    // each mode runs one kind. Every allreduce op on float32 (and avg on int32, fp16 sum: the 2-byte kernels) up
    // to 3 ranks; beyond, where every case costs more, sum and avg. Floating-point reductions take rounding inputs
    // here (the rank order matters most on the pipelined path), int32 avg exact ones.
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
        out.push_back({coll, dt, op, big, inPlace, registered, !(reduces(coll) && ref::isFloating(dt))});
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

// The algorithm names the planner and perf JSON see: the catalogue entry that runs the call with ordinary buffers
// (ranks that are threads read each other's buffers in place, so a large allreduce takes the mapped form).
TEST(ShmCollectivesQuery, NamesDirectAlgorithms) {
  runOnRanks(2, Wire::kTcp, [&](ternComm_t comm, int) {
    char name[64];
    double us = 0;
    ASSERT_EQ(ternQueryAlgorithm(comm, "allreduce", 16, ternFloat32, name, sizeof(name), &us), ternSuccess);
    EXPECT_STREQ(name, "shm_small");
    ASSERT_EQ(ternQueryAlgorithm(comm, "allreduce", 1 << 20, ternFloat32, name, sizeof(name), &us), ternSuccess);
    EXPECT_STREQ(name, "shm_mapped");
    ASSERT_EQ(ternQueryAlgorithm(comm, "broadcast", 1 << 20, ternFloat32, name, sizeof(name), &us), ternSuccess);
    EXPECT_STREQ(name, "shm_pipelined");
    ASSERT_EQ(ternQueryAlgorithm(comm, "barrier", 0, ternFloat32, name, sizeof(name), &us), ternSuccess);
    EXPECT_STREQ(name, "shm_small");
    // All-to-all too: blocks too large for the slot are read in place between threads (direct_alltoall.cpp).
    ASSERT_EQ(ternQueryAlgorithm(comm, "alltoall", 1 << 20, ternFloat32, name, sizeof(name), &us), ternSuccess);
    EXPECT_STREQ(name, "shm_mapped");
  });
}

}  // namespace
}  // namespace tern
