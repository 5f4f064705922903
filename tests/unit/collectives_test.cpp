// Every collective x every datatype x every op x odd counts x rank counts, through the real communicator and
// executor on the in-process transport, against a reference computed here. Inputs are small integers so that
// every partial sum/product is exact in every datatype: the result must then equal the reference bit for bit,
// whatever order the algorithm combined them in, and every rank must hold identical bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>
#include <vector>

#include "core/dtype.hpp"
#include "kernels/reduce.hpp"
#include "rank_threads.hpp"
#include "typed_value.hpp"

namespace tern {
namespace {

using testing::runOnRanks;
using testing::Wire;

// Value of element i contributed by rank r: small integers (prod: 1, 2 and -1 for signed types) so nothing
// overflows or rounds, except int8/uint8 arithmetic which wraps identically in reference and library.
double inputValue(int r, size_t i, ternRedOp_t op, ternDataType_t dt) {
  bool isSigned = dt != ternUint8 && dt != ternUint32 && dt != ternUint64;
  if (op == ternProd) {
    size_t k = (static_cast<size_t>(r) * 5 + i * 3) % 7;
    if (k == 0) return 2;
    if (k == 1 && isSigned) return -1;
    return 1;
  }
  double v = static_cast<double>((static_cast<size_t>(r) * 7 + i * 13 + 3) % 9);
  return isSigned ? v - 4 : v;  // -4..4 or 0..8
}

// Reference reduction of element i over ranks, computed with tern's own scalar kernel one rank at a time (the
// result is exact for our inputs, so order does not matter), then avg's division.
std::vector<char> referenceReduce(int n, size_t count, size_t offset, ternDataType_t dt, ternRedOp_t op) {
  size_t e = dataTypeSize(dt);
  std::vector<char> acc(count * e), in(count * e);
  for (size_t i = 0; i < count; ++i) perf::storeTyped(acc.data(), i, dt, inputValue(0, offset + i, op, dt));
  for (int r = 1; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) perf::storeTyped(in.data(), i, dt, inputValue(r, offset + i, op, dt));
    reduceScalar(acc.data(), acc.data(), in.data(), count, dt, op);
  }
  if (op == ternAvg && count > 0) finalizeAverage(acc.data(), count, dt, n);
  return acc;
}

std::vector<char> fillInput(int r, size_t count, size_t offset, ternDataType_t dt, ternRedOp_t op) {
  std::vector<char> b(count * dataTypeSize(dt));
  for (size_t i = 0; i < count; ++i) perf::storeTyped(b.data(), i, dt, inputValue(r, offset + i, op, dt));
  return b;
}

enum class Coll { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kAlltoAll, kAlltoAllv };
const char* collName(Coll c) {
  static const char* names[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast",
                                "Reduce",    "AlltoAll",  "AlltoAllv"};
  return names[static_cast<int>(c)];
}
bool reduces(Coll c) { return c == Coll::kAllReduce || c == Coll::kReduceScatter || c == Coll::kReduce; }

// Runs one collective on every rank and checks every rank's output against the reference.
void checkCollective(Coll coll, int n, size_t count, ternDataType_t dt, ternRedOp_t op, bool inPlace, Wire wire) {
  size_t e = dataTypeSize(dt);
  int root = n > 1 ? n - 1 : 0;  // a non-zero root catches "assumed root 0" bugs
  std::vector<std::vector<char>> outputs(n);
  runOnRanks(n, wire, [&](ternComm_t comm, int r) {
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
          std::memcpy(out.data() + r * count * e, in.data(), count * e);
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
        // Rank r sends (count + r + p) % 5 elements... scaled by count to p: irregular sizes, including zeros.
        auto amount = [&](int src, int dst) { return (count * static_cast<size_t>((src + 2 * dst) % 3)) / 2; };
        std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
        size_t st = 0, rt = 0;
        for (int p = 0; p < n; ++p) {
          sc[p] = amount(r, p);
          sd[p] = st;
          st += sc[p];
          rc[p] = amount(p, r);
          rd[p] = rt;
          rt += rc[p];
        }
        std::vector<char> in = fillInput(r, st, 0, dt, ternSum);
        out.assign(rt * e, 0);
        res = ternAlltoAllv(in.data(), sc.data(), sd.data(), out.data(), rc.data(), rd.data(), dt, comm);
        break;
      }
    }
    EXPECT_EQ(res, ternSuccess) << "rank " << r << ": " << ternGetLastError(comm);
    outputs[r] = std::move(out);
  });

  for (int r = 0; r < n; ++r) {
    std::vector<char> want;
    switch (coll) {
      case Coll::kAllReduce:
        want = referenceReduce(n, count, 0, dt, op);
        break;
      case Coll::kAllGather:
        for (int p = 0; p < n; ++p) {
          auto part = fillInput(p, count, 0, dt, ternSum);
          want.insert(want.end(), part.begin(), part.end());
        }
        break;
      case Coll::kReduceScatter:
        want = referenceReduce(n, count, static_cast<size_t>(r) * count, dt, op);
        break;
      case Coll::kBroadcast:
        want = fillInput(root, count, 0, dt, ternSum);
        break;
      case Coll::kReduce:
        if (r == root) want = referenceReduce(n, count, 0, dt, op);
        break;
      case Coll::kAlltoAll:
        for (int p = 0; p < n; ++p) {
          auto all = fillInput(p, count * n, 0, dt, ternSum);
          want.insert(want.end(), all.begin() + r * count * e, all.begin() + (r + 1) * count * e);
        }
        break;
      case Coll::kAlltoAllv: {
        auto amount = [&](int src, int dst) { return (count * static_cast<size_t>((src + 2 * dst) % 3)) / 2; };
        for (int p = 0; p < n; ++p) {
          size_t off = 0;
          for (int q = 0; q < r; ++q) off += amount(p, q);
          auto all = fillInput(p, off + amount(p, r), 0, dt, ternSum);
          want.insert(want.end(), all.begin() + off * e, all.end());
        }
        break;
      }
    }
    ASSERT_EQ(outputs[r].size(), want.size()) << collName(coll) << " rank " << r;
    ASSERT_TRUE(outputs[r] == want) << collName(coll) << " " << dataTypeName(dt) << " " << redOpName(op) << " n=" << n
                                    << " count=" << count << (inPlace ? " in-place" : " out-of-place") << " rank " << r
                                    << " differs from the reference";
  }
}

using Params = std::tuple<Coll, int /*ranks*/, size_t /*count*/>;

class CollectivesMatrix : public ::testing::TestWithParam<Params> {};

TEST_P(CollectivesMatrix, EveryDatatypeOpAndPlacementMatchesReference) {
  auto [coll, n, count] = GetParam();
  bool big = count > 100000;
  for (int dt = 0; dt < ternNumTypes; ++dt) {
    for (int op = 0; op < ternNumOps; ++op) {
      if (!reduces(coll) && op > 0) break;  // op does not apply
      // The 2^20+3 case runs every op on float32 and int32 and sum on every datatype, to keep the suite fast;
      // collectives that only move data (their cost grows with n x count) take one datatype per element size.
      if (big && op > 0 && dt != ternFloat32 && dt != ternInt32) continue;
      if (big && !reduces(coll) && dt != ternInt8 && dt != ternBfloat16 && dt != ternFloat32 && dt != ternFloat64) {
        continue;
      }
      for (bool inPlace : {false, true}) {
        if (coll == Coll::kAlltoAllv && inPlace) continue;
        checkCollective(coll, n, count, static_cast<ternDataType_t>(dt), static_cast<ternRedOp_t>(op), inPlace,
                        Wire::kInproc);
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
                       ::testing::Values(1, 2, 3, 4, 5, 8),
                       ::testing::Values(size_t{0}, size_t{1}, size_t{7}, size_t{1023}, size_t{(1u << 20) + 3})),
    paramName);

// The same collectives over real TCP sockets on loopback (ranks are threads of this process).
class CollectivesOverTcp : public ::testing::TestWithParam<std::tuple<Coll, int>> {};

TEST_P(CollectivesOverTcp, MatchReference) {
  auto [coll, n] = GetParam();
  for (size_t count : {size_t{0}, size_t{7}, size_t{1023}, size_t{(1u << 20) + 3}}) {
    for (bool inPlace : {false, true}) {
      if (coll == Coll::kAlltoAllv && inPlace) continue;
      checkCollective(coll, n, count, ternFloat32, reduces(coll) ? ternAvg : ternSum, inPlace, Wire::kTcp);
      checkCollective(coll, n, count, ternBfloat16, ternSum, inPlace, Wire::kTcp);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Loopback, CollectivesOverTcp,
                         ::testing::Combine(::testing::Values(Coll::kAllReduce, Coll::kAllGather, Coll::kReduceScatter,
                                                              Coll::kBroadcast, Coll::kReduce, Coll::kAlltoAll,
                                                              Coll::kAlltoAllv),
                                            ::testing::Values(2, 3, 4)),
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

}  // namespace
}  // namespace tern
