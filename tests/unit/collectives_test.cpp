// Every collective x every datatype x every op x odd counts x rank counts 1..8, through the real communicator and
// executor on the in-process transport, and the same matrix over TCP loopback on 2..8 ranks (a subset of datatypes
// at 2^20 + 3 elements, see below), against the independent reference (tests/common/reference.hpp: its own fp16/bf16
// rounding, reductions in double or 64-bit integers in rank order). Inputs are small integers so that every partial
// sum/product is exact in every datatype: the result must then equal the reference bit for bit, whatever order the
// algorithm combined them in, and every rank must hold identical bits.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "base/dtype.hpp"
#include "common/reference.hpp"
#include "rank_threads.hpp"

namespace tern {
namespace {

using testing::runOnRanks;
using testing::Wire;

// Value of element i contributed by rank r: small integers (prod: 1, 2 and -1 for signed types) so nothing
// overflows or rounds, except int8/uint8 products, which wrap (modulo 2^8, as the reference's do).
double inputValue(int r, size_t i, ternRedOp_t op, ternDataType_t dt) {
  if (op == ternProd) {
    size_t k = (static_cast<size_t>(r) * 5 + i * 3) % 7;
    if (k == 0) return 2;
    if (k == 1 && ref::isSigned(dt)) return -1;
    return 1;
  }
  double v = static_cast<double>((static_cast<size_t>(r) * 7 + i * 13 + 3) % 9);
  return ref::isSigned(dt) ? v - 4 : v;  // -4..4 or 0..8
}

// inputValue repeats every 9 elements for sums and every 7 for products, so every input and every reference
// element depends only on i % kPeriod: each is computed for one period and repeated (the 2^20+3 cases would
// otherwise spend most of their time recomputing the same values).
constexpr size_t kPeriod = 63;

// count elements, element i being element (offset + i) % kPeriod of one period.
std::vector<char> repeatPeriod(const std::vector<char>& period, size_t count, size_t offset, ternDataType_t dt) {
  const size_t e = ref::elementSize(dt);
  std::vector<char> out(count * e);
  for (size_t i = 0; i < count; ++i) std::memcpy(out.data() + i * e, period.data() + (offset + i) % kPeriod * e, e);
  return out;
}

// Rank r's buffer of count elements starting at element `offset` of its input sequence.
std::vector<char> fillInput(int r, size_t count, size_t offset, ternDataType_t dt, ternRedOp_t op) {
  const auto period = ref::makeBuffer(kPeriod, dt, [&](size_t i) { return inputValue(r, i, op, dt); });
  return repeatPeriod(period, count, offset, dt);
}

// The reference reduction of elements [offset, offset + count) over n ranks.
std::vector<char> referenceReduce(int n, size_t count, size_t offset, ternDataType_t dt, ternRedOp_t op) {
  const auto period =
      ref::reduceBuffer(n, kPeriod, 0, dt, op, [&](int r, size_t i) { return inputValue(r, i, op, dt); });
  return repeatPeriod(period, count, offset, dt);
}

enum class Coll { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kAlltoAll, kAlltoAllv };
const char* collName(Coll c) {
  static const char* names[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast",
                                "Reduce",    "AlltoAll",  "AlltoAllv"};
  return names[static_cast<int>(c)];
}
bool reduces(Coll c) { return c == Coll::kAllReduce || c == Coll::kReduceScatter || c == Coll::kReduce; }

// One call of a collective: datatype, op (ternSum for the collectives that only move data) and placement.
struct Variant {
  ternDataType_t dt;
  ternRedOp_t op;
  bool inPlace;
};

// Alltoallv's irregular layout: src sends dst (count * ((src + 2 dst) % 3)) / 2 elements, zeros included.
size_t alltoallvAmount(size_t count, int src, int dst) {
  return (count * static_cast<size_t>((src + 2 * dst) % 3)) / 2;
}

// Runs one variant of coll on rank r of comm and returns what the rank's output holds afterwards.
std::vector<char> runOneRank(Coll coll, int n, size_t count, const Variant& v, ternComm_t comm, int r) {
  const ternDataType_t dt = v.dt;
  const ternRedOp_t op = v.op;
  const bool inPlace = v.inPlace;
  const size_t e = ref::elementSize(dt);
  const int root = n > 1 ? n - 1 : 0;  // a non-zero root catches "assumed root 0" bugs
  std::vector<char> out;
  ternResult_t res = ternSuccess;
  switch (coll) {
    case Coll::kAllReduce: {
      std::vector<char> in = fillInput(r, count, 0, dt, op);
      out.assign(count * e, 0);
      if (inPlace) {
        out = in;
        res = ternAllReduce(out.data(), out.data(), count, dt, op, comm);
      } else {
        res = ternAllReduce(in.data(), out.data(), count, dt, op, comm);
      }
      break;
    }
    case Coll::kAllGather: {
      std::vector<char> in = fillInput(r, count, 0, dt, ternSum);
      out.assign(count * e * n, 0);
      if (inPlace) {
        if (count > 0) std::memcpy(out.data() + r * count * e, in.data(), count * e);  // no null pointers to memcpy
        res = ternAllGather(out.data() + r * count * e, out.data(), count, dt, comm);
      } else {
        res = ternAllGather(in.data(), out.data(), count, dt, comm);
      }
      break;
    }
    case Coll::kReduceScatter: {
      std::vector<char> in = fillInput(r, count * n, 0, dt, op);
      if (inPlace) {
        res = ternReduceScatter(in.data(), in.data() + r * count * e, count, dt, op, comm);
        out.assign(in.begin() + r * count * e, in.begin() + (r + 1) * count * e);
      } else {
        out.assign(count * e, 0);
        res = ternReduceScatter(in.data(), out.data(), count, dt, op, comm);
      }
      break;
    }
    case Coll::kBroadcast: {
      std::vector<char> in = fillInput(root, count, 0, dt, ternSum);
      out.assign(count * e, 0);
      if (inPlace) {
        if (r == root) out = in;
        res = ternBroadcast(out.data(), out.data(), count, dt, root, comm);
      } else {
        res = ternBroadcast(r == root ? in.data() : nullptr, out.data(), count, dt, root, comm);
      }
      break;
    }
    case Coll::kReduce: {
      std::vector<char> in = fillInput(r, count, 0, dt, op);
      if (r == root) out.assign(count * e, 0);
      if (inPlace && r == root) {
        out = in;
        res = ternReduce(out.data(), out.data(), count, dt, op, root, comm);
      } else {
        res = ternReduce(in.data(), r == root ? out.data() : nullptr, count, dt, op, root, comm);
      }
      break;
    }
    case Coll::kAlltoAll: {
      std::vector<char> in = fillInput(r, count * n, 0, dt, ternSum);
      out.assign(count * n * e, 0);
      if (inPlace) {
        out = in;
        res = ternAlltoAll(out.data(), out.data(), count, dt, comm);
      } else {
        res = ternAlltoAll(in.data(), out.data(), count, dt, comm);
      }
      break;
    }
    case Coll::kAlltoAllv: {
      std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
      size_t st = 0, rt = 0;
      for (int p = 0; p < n; ++p) {
        sc[p] = alltoallvAmount(count, r, p);
        sd[p] = st;
        st += sc[p];
        rc[p] = alltoallvAmount(count, p, r);
        rd[p] = rt;
        rt += rc[p];
      }
      std::vector<char> in = fillInput(r, st, 0, dt, ternSum);
      out.assign(rt * e, 0);
      res = ternAlltoAllv(in.data(), sc.data(), sd.data(), out.data(), rc.data(), rd.data(), dt, comm);
      break;
    }
  }
  EXPECT_EQ(res, ternSuccess) << collName(coll) << " " << dataTypeName(dt) << " rank " << r << ": "
                              << ternGetLastError(comm);
  return out;
}

// What rank r's output must hold.
std::vector<char> expectedOutput(Coll coll, int n, size_t count, const Variant& v, int r) {
  const int root = n > 1 ? n - 1 : 0;
  std::vector<char> want;
  switch (coll) {
    case Coll::kAllReduce:
      return referenceReduce(n, count, 0, v.dt, v.op);
    case Coll::kAllGather:
      for (int p = 0; p < n; ++p) {
        auto part = fillInput(p, count, 0, v.dt, ternSum);
        want.insert(want.end(), part.begin(), part.end());
      }
      return want;
    case Coll::kReduceScatter:
      return referenceReduce(n, count, static_cast<size_t>(r) * count, v.dt, v.op);
    case Coll::kBroadcast:
      return fillInput(root, count, 0, v.dt, ternSum);
    case Coll::kReduce:
      if (r == root) want = referenceReduce(n, count, 0, v.dt, v.op);
      return want;
    case Coll::kAlltoAll:
      for (int p = 0; p < n; ++p) {
        auto block = fillInput(p, count, static_cast<size_t>(r) * count, v.dt, ternSum);
        want.insert(want.end(), block.begin(), block.end());
      }
      return want;
    case Coll::kAlltoAllv:
      for (int p = 0; p < n; ++p) {
        size_t off = 0;
        for (int q = 0; q < r; ++q) off += alltoallvAmount(count, p, q);
        auto block = fillInput(p, alltoallvAmount(count, p, r), off, v.dt, ternSum);
        want.insert(want.end(), block.begin(), block.end());
      }
      return want;
  }
  return want;
}

// Runs every variant of coll on one set of n communicators (one after the other, as an application would) and
// checks every rank's output of every variant against the reference.
void checkCollective(Coll coll, int n, size_t count, const std::vector<Variant>& variants, Wire wire) {
  std::vector<std::vector<std::vector<char>>> outputs(variants.size(), std::vector<std::vector<char>>(n));
  runOnRanks(n, wire, [&](ternComm_t comm, int r) {
    for (size_t k = 0; k < variants.size(); ++k) outputs[k][r] = runOneRank(coll, n, count, variants[k], comm, r);
  });
  for (size_t k = 0; k < variants.size(); ++k) {
    const Variant& v = variants[k];
    for (int r = 0; r < n; ++r) {
      const std::vector<char> want = expectedOutput(coll, n, count, v, r);
      ASSERT_EQ(outputs[k][r].size(), want.size()) << collName(coll) << " rank " << r;
      ASSERT_TRUE(outputs[k][r] == want) << collName(coll) << " " << dataTypeName(v.dt) << " " << redOpName(v.op)
                                         << " n=" << n << " count=" << count
                                         << (v.inPlace ? " in-place" : " out-of-place") << " rank " << r
                                         << " differs from the reference";
    }
    // Free each variant's outputs once checked: the large counts hold n buffers of megabytes per variant.
    outputs[k].clear();
  }
}

void checkCollective(Coll coll, int n, size_t count, ternDataType_t dt, ternRedOp_t op, bool inPlace, Wire wire) {
  checkCollective(coll, n, count, {Variant{dt, op, inPlace}}, wire);
}

// Every datatype x op (only sum for the collectives that only move data) x placement (alltoallv has no in-place).
std::vector<Variant> allVariants(Coll coll) {
  std::vector<Variant> out;
  for (int dt = 0; dt < ternNumTypes; ++dt) {
    for (int op = 0; op < ternNumOps; ++op) {
      if (!reduces(coll) && op > 0) break;
      for (bool inPlace : {false, true}) {
        if (coll == Coll::kAlltoAllv && inPlace) continue;
        out.push_back({static_cast<ternDataType_t>(dt), static_cast<ternRedOp_t>(op), inPlace});
      }
    }
  }
  return out;
}

using Params = std::tuple<Coll, int /*ranks*/, size_t /*count*/>;

class CollectivesMatrix : public ::testing::TestWithParam<Params> {};

TEST_P(CollectivesMatrix, EveryDatatypeOpAndPlacementMatchesReference) {
  auto [coll, n, count] = GetParam();
  if (count <= 100000) {
    checkCollective(coll, n, count, allVariants(coll), Wire::kInproc);
    return;
  }
  // The 2^20+3 case, to keep the suite fast: every op on float32 and int32 and sum on every datatype; collectives
  // that only move data (their cost grows with n x count) take one datatype per element size. On 6 and 7 ranks,
  // rank counts that are not powers of two like 3 and 5, which run the full set, fewer: sum on one datatype per
  // kernel family (int8, fp16, bf16, int32, fp64) with every op on float32, and the data movers only the smallest
  // and largest elements (int8, fp64). One variant per communicator here: the outputs of n ranks are megabytes each.
  const bool fewerTypes = n == 6 || n == 7;
  for (int dt = 0; dt < ternNumTypes; ++dt) {
    const auto t = static_cast<ternDataType_t>(dt);
    if (!reduces(coll)) {
      const bool perElementSize = t == ternInt8 || t == ternBfloat16 || t == ternFloat32 || t == ternFloat64;
      if (!perElementSize || (fewerTypes && t != ternInt8 && t != ternFloat64)) continue;
    } else if (fewerTypes && t != ternInt8 && t != ternFloat16 && t != ternBfloat16 && t != ternInt32 &&
               t != ternFloat32 && t != ternFloat64) {
      continue;
    }
    for (int op = 0; op < ternNumOps; ++op) {
      if (!reduces(coll) && op > 0) break;
      if (op > 0 && t != ternFloat32 && (t != ternInt32 || fewerTypes)) continue;
      for (bool inPlace : {false, true}) {
        if (coll == Coll::kAlltoAllv && inPlace) continue;
        checkCollective(coll, n, count, t, static_cast<ternRedOp_t>(op), inPlace, Wire::kInproc);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

std::string paramName(const ::testing::TestParamInfo<Params>& info) {
  return std::string(collName(std::get<0>(info.param))) + "_n" + std::to_string(std::get<1>(info.param)) + "_c" +
         std::to_string(std::get<2>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    Inproc, CollectivesMatrix,
    ::testing::Combine(::testing::Values(Coll::kAllReduce, Coll::kAllGather, Coll::kReduceScatter, Coll::kBroadcast,
                                         Coll::kReduce, Coll::kAlltoAll, Coll::kAlltoAllv),
                       ::testing::Range(1, 9),
                       ::testing::Values(size_t{0}, size_t{1}, size_t{7}, size_t{1023}, size_t{(1u << 20) + 3})),
    paramName);

// The same collectives over real TCP sockets on loopback (ranks are threads of this process), on 2..8 ranks: every
// datatype x op x placement at the small odd counts. At 2^20 + 3 elements, where loopback copies dominate the
// time, one datatype per element size with the ops spread over them (float32 avg: division; bf16 sum: the 2-byte
// conversion path; int8 min, uint32 max, float64 prod), data-moving collectives one datatype per element size;
// both placements on 2..5 ranks, out of place only on 6..8 (placement is local buffer handling, the same on every
// rank count).
class CollectivesOverTcp : public ::testing::TestWithParam<std::tuple<Coll, int>> {};

TEST_P(CollectivesOverTcp, MatchReference) {
  auto [coll, n] = GetParam();
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}}) {
    checkCollective(coll, n, count, allVariants(coll), Wire::kTcp);
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::vector<std::pair<ternDataType_t, ternRedOp_t>> big;
  if (reduces(coll)) {
    big = {{ternFloat32, ternAvg},
           {ternBfloat16, ternSum},
           {ternInt8, ternMin},
           {ternUint32, ternMax},
           {ternFloat64, ternProd}};
  } else {
    big = {{ternInt8, ternSum}, {ternBfloat16, ternSum}, {ternFloat32, ternSum}, {ternFloat64, ternSum}};
  }
  std::vector<Variant> variants;
  for (auto [dt, op] : big) {
    for (bool inPlace : {false, true}) {
      if ((coll == Coll::kAlltoAllv || n >= 6) && inPlace) continue;
      variants.push_back({dt, op, inPlace});
    }
  }
  for (const Variant& v : variants) {
    checkCollective(coll, n, (size_t{1} << 20) + 3, v.dt, v.op, v.inPlace, Wire::kTcp);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Loopback, CollectivesOverTcp,
                         ::testing::Combine(::testing::Values(Coll::kAllReduce, Coll::kAllGather, Coll::kReduceScatter,
                                                              Coll::kBroadcast, Coll::kReduce, Coll::kAlltoAll,
                                                              Coll::kAlltoAllv),
                                            ::testing::Range(2, 9)),
                         [](const auto& info) {
                           return std::string(collName(std::get<0>(info.param))) + "_n" +
                                  std::to_string(std::get<1>(info.param));
                         });

// With arbitrary floats (where summation order matters) every rank must still end with identical bits.
TEST(Collectives, AllReduceOfRandomFloatsIsBitIdenticalOnEveryRank) {
  for (int n : {3, 8}) {
    size_t count = 100003;
    std::vector<std::vector<float>> outs(n);
    runOnRanks(n, Wire::kInproc, [&](ternComm_t comm, int r) {
      std::vector<float> in(count);
      uint32_t x = 12345u + static_cast<uint32_t>(r) * 7919u;
      for (auto& v : in) {
        x = x * 1664525u + 1013904223u;
        v = static_cast<float>(x) / 4294967296.0f * 2.0f - 1.0f;
      }
      outs[r].assign(count, 0);
      ASSERT_EQ(ternAllReduce(in.data(), outs[r].data(), count, ternFloat32, ternSum, comm), ternSuccess);
    });
    for (int r = 1; r < n; ++r) {
      ASSERT_EQ(std::memcmp(outs[0].data(), outs[r].data(), count * sizeof(float)), 0) << "rank " << r;
    }
  }
}

// One rank: the alltoallv's one block moves between its displacements, nothing else in the output is touched, and
// a receive count that differs from the send count is refused with both counts named.
TEST(Collectives, OneRankAlltoAllvMovesItsBlockBetweenDisplacements) {
  runOnRanks(1, Wire::kInproc, [&](ternComm_t comm, int) {
    std::vector<int32_t> in = {1, 2, 3, 4, 5, 6, 7};
    std::vector<int32_t> out(9, -1);
    size_t sc = 4, sd = 2, rc = 4, rd = 3;
    ASSERT_EQ(ternAlltoAllv(in.data(), &sc, &sd, out.data(), &rc, &rd, ternInt32, comm), ternSuccess)
        << ternGetLastError(comm);
    EXPECT_EQ(out, (std::vector<int32_t>{-1, -1, -1, 3, 4, 5, 6, -1, -1}));
    rc = 5;
    EXPECT_EQ(ternAlltoAllv(in.data(), &sc, &sd, out.data(), &rc, &rd, ternInt32, comm), ternInvalidArgument);
    const std::string error = ternGetLastError(comm);
    EXPECT_NE(error.find("sends 4 elements to itself but expects 5"), std::string::npos) << error;
  });
}

}  // namespace
}  // namespace tern
