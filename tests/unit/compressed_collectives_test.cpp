// Compressed collectives on 1..8 ranks, checked two ways:
//  - against the TRUE result (sum or average of the inputs in double, rank order) within each codec's error bound
//    (perf/common/compressed_bounds.hpp, derived from the codec definitions; no library code computes what is
//    expected): the mean of K calls with error feedback, on the bounds' check data, for allreduce, allgather and
//    reduce-scatter, sum and avg; fp16/bf16 exactly on small integers and within rounding on other data. Each
//    check first confirms that a result of zeros, or one missing a rank, would fail it;
//  - the collective's composition: its bits equal the codec API composed by hand here (compress::makeCodec,
//    ErrorFeedback: two-phase for dense codecs, sparse all-gather for Top-K) over several steps. This shares the
//    codecs with the library, so it says nothing about the codecs themselves, only that the schedule chunks,
//    orders, seeds and feeds back as documented.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compress/codec_factory.hpp"
#include "compress/error_feedback.hpp"
#include "compressed_bounds.hpp"
#include "rank_threads.hpp"
#include "synthetic_gradient.hpp"

namespace tern {
namespace {

using testing::runOnRanks;
using testing::Wire;

std::vector<float> gradient(int rank, int step, size_t n) { return testing::syntheticGradient(rank, step, n); }

constexpr uint64_t kSeed = 0x7465726e;  // the compressor's default seed

// Reference two-phase allreduce over all ranks at once; worker/server residuals persist across steps.
struct TwoPhaseReference {
  std::unique_ptr<compress::Codec> codec;
  std::vector<compress::ErrorFeedback> worker, server;
  int n;
  size_t count;
  TwoPhaseReference(const std::string& spec, int ranks, size_t cnt)
      : codec(compress::makeCodec(spec)),
        worker(ranks, compress::ErrorFeedback(cnt)),
        server(ranks, compress::ErrorFeedback(cnt)),
        n(ranks),
        count(cnt) {}
  // The library cuts the tensor into floor(count / kPieceElems) pieces (at least one; kPieceElems is
  // BuildOptions::compressedPieceBytes, 4 MiB of fp32) of equal size, rounded up, and runs the two-phase exchange on
  // each; chunk c of a piece belongs to rank c.
  static constexpr size_t kPieceElems = (size_t{4} << 20) / sizeof(float);
  std::vector<float> step(const std::vector<std::vector<float>>& in, uint64_t stepIndex, bool avg) {
    std::vector<float> out(count, 0.0f);
    const size_t pieces = std::max<size_t>(count / kPieceElems, 1);
    const size_t piece = (count + pieces - 1) / pieces;
    for (size_t base = 0; base < count; base += piece) {
      const size_t pieceCount = std::min(piece, count - base);
      auto off = [&](int c) { return base + pieceCount * static_cast<size_t>(c) / static_cast<size_t>(n); };
      for (int c = 0; c < n; ++c) {
        size_t o = off(c), len = off(c + 1) - o;
        std::vector<float> acc(len, 0.0f);
        for (int p = 0; p < n; ++p) {
          std::vector<uint8_t> payload(codec->payloadBytes(len));
          worker[p].encode(*codec, in[p].data() + o, ternFloat32, len, payload.data(), {kSeed, stepIndex, o});
          codec->decode(payload.data(), payload.size(), len, acc.data(), p > 0);
        }
        if (avg) {
          for (auto& v : acc) v = v / static_cast<float>(n);
        }
        std::vector<uint8_t> reduced(codec->payloadBytes(len));
        server[c].encode(*codec, acc.data(), ternFloat32, len, reduced.data(), {kSeed, stepIndex, o});
        codec->decode(reduced.data(), reduced.size(), len, out.data() + o, false);
      }
    }
    return out;
  }
  std::vector<float> sparseStep(const std::vector<std::vector<float>>& in, uint64_t stepIndex, bool avg) {
    std::vector<float> out(count, 0.0f);
    for (int p = 0; p < n; ++p) {
      std::vector<uint8_t> payload(codec->payloadBytes(count));
      worker[p].encode(*codec, in[p].data(), ternFloat32, count, payload.data(), {kSeed, stepIndex, 0});
      codec->decode(payload.data(), payload.size(), count, out.data(), p > 0);
    }
    if (avg) {
      for (auto& v : out) v = v / static_cast<float>(n);
    }
    return out;
  }
};

class CompressedAllReduce : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

void checkAgainstReference(const std::string& spec, int n, size_t count, int steps) {
  bool sparse = spec.rfind("topk", 0) == 0;
  for (bool avg : {false, true}) {
    TwoPhaseReference ref(spec, n, count);
    std::vector<std::vector<std::vector<float>>> got(steps, std::vector<std::vector<float>>(n));
    runOnRanks(n, Wire::kInproc, [&](ternComm_t comm, int rank) {
      ternCompressor_t c = nullptr;
      ASSERT_EQ(ternCompressorCreate(spec.c_str(), nullptr, count, ternFloat32, &c), ternSuccess)
          << ternGetLastError(nullptr);
      for (int s = 0; s < steps; ++s) {
        std::vector<float> g = gradient(rank, s, count), out(count, -1.0f);
        ASSERT_EQ(ternAllReduceCompressed(g.data(), out.data(), count, ternFloat32, avg ? ternAvg : ternSum, c, comm),
                  ternSuccess)
            << ternGetLastError(comm);
        got[s][rank] = out;
      }
      ternCompressorDestroy(c);
    });
    for (int s = 0; s < steps; ++s) {
      std::vector<std::vector<float>> in(n);
      for (int r = 0; r < n; ++r) in[r] = gradient(r, s, count);
      std::vector<float> want = sparse ? ref.sparseStep(in, s, avg) : ref.step(in, s, avg);
      for (int r = 0; r < n; ++r) {
        ASSERT_EQ(got[s][r].size(), count);
        ASSERT_EQ(std::memcmp(got[s][r].data(), want.data(), count * sizeof(float)), 0)
            << spec << " n=" << n << " step " << s << " rank " << r << (avg ? " avg" : " sum");
      }
    }
  }
}

TEST_P(CompressedAllReduce, MatchesTheCodecApiComposedByHandOnEveryRankOverSteps) {
  auto [spec, n] = GetParam();
  checkAgainstReference(spec, n, 10007, 3);
}

// Larger than one pipeline piece: the pieces' chunks, scales and residuals line up with the hand composition's.
TEST(CompressedAllReducePieces, SeveralPiecesMatchTheCodecApiComposedByHand) {
  for (const char* spec : {"sign", "qsgd:4", "bf16"}) {
    for (int n : {2, 3}) checkAgainstReference(spec, n, 2 * TwoPhaseReference::kPieceElems + 4097, 2);
  }
}

// Every codec spec on 1..8 ranks, named "spec_nN" (':' and '.' spelled '_').
auto everyCodecOnEveryRankCount() {
  return ::testing::Combine(
      ::testing::Values("sign", "sign:rms", "qsgd:4", "qsgd:8", "fp16", "bf16", "topk:0.01", "topk:0.05:exact"),
      ::testing::Range(1, 9));
}
std::string codecParamName(const ::testing::TestParamInfo<std::tuple<std::string, int>>& info) {
  std::string s = std::get<0>(info.param);
  for (auto& ch : s) {
    if (ch == ':' || ch == '.') ch = '_';
  }
  return s + "_n" + std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Codecs, CompressedAllReduce, everyCodecOnEveryRankCount(), codecParamName);

namespace cc = compressed_check;

enum class Coll { kAllReduce, kAllGather, kReduceScatter };

const char* collName(Coll c) {
  return c == Coll::kAllReduce ? "allreduce" : c == Coll::kAllGather ? "allgather" : "reducescatter";
}

// Rank p's input element j (its send buffer's index).
using InputFn = std::function<double(int p, size_t j)>;

// Calls the compressed collective `calls` times on every rank with a fresh compressor and returns each rank's mean
// result (in double). `per`: the allreduce count, the allgather block, the reduce-scatter block.
std::vector<std::vector<double>> meanResults(const std::string& spec, Coll coll, int n, size_t per, ternRedOp_t op,
                                             int calls, const InputFn& input) {
  const size_t inElems = coll == Coll::kReduceScatter ? per * n : per;
  const size_t outElems = coll == Coll::kAllGather ? per * n : per;
  std::vector<std::vector<double>> mean(n, std::vector<double>(outElems, 0.0));
  runOnRanks(n, Wire::kInproc, [&](ternComm_t comm, int rank) {
    ternCompressor_t c = nullptr;
    ASSERT_EQ(ternCompressorCreate(spec.c_str(), nullptr, inElems, ternFloat32, &c), ternSuccess)
        << ternGetLastError(nullptr);
    std::vector<float> in(inElems), out(outElems);
    for (size_t j = 0; j < inElems; ++j) in[j] = static_cast<float>(input(rank, j));
    for (int k = 0; k < calls; ++k) {
      std::fill(out.begin(), out.end(), -7.0f);
      ternResult_t r = coll == Coll::kAllReduce
                           ? ternAllReduceCompressed(in.data(), out.data(), per, ternFloat32, op, c, comm)
                       : coll == Coll::kAllGather
                           ? ternAllGatherCompressed(in.data(), out.data(), per, ternFloat32, c, comm)
                           : ternReduceScatterCompressed(in.data(), out.data(), per, ternFloat32, op, c, comm);
      ASSERT_EQ(r, ternSuccess) << ternGetLastError(comm);
      for (size_t j = 0; j < outElems; ++j) mean[rank][j] += out[j];
    }
    for (auto& v : mean[rank]) v /= calls;
    ternCompressorDestroy(c);
  });
  return mean;
}

// Every element of every rank's mean result within the codec's bound of the true result; and, so that the check
// means something, a result of zeros or one without the last rank's contribution would have failed it.
void expectWithinBound(const std::string& spec, Coll coll, int n, size_t per, ternRedOp_t op, const InputFn& input,
                       bool checkData = true) {
  int calls = 0;
  const cc::Codec codec = cc::parseCodec(spec);
  if (calls == 0) calls = cc::checkCalls(codec, n);
  const bool gather = coll == Coll::kAllGather, scatter = coll == Coll::kReduceScatter;
  cc::Shape shape;
  shape.ranks = n;
  shape.average = op == ternAvg;
  shape.serverStage = coll == Coll::kAllReduce && codec.family != cc::Family::kTopK;
  const size_t inElems = scatter ? per * n : per;
  const size_t outElems = gather ? per * n : per;
  cc::Magnitudes mag;
  std::vector<double> rankMax(n, 0.0);
  for (int p = 0; p < n; ++p) {
    for (size_t j = 0; j < inElems; ++j) rankMax[p] = std::max(rankMax[p], std::fabs(input(p, j)));
  }
  mag.maxAbsInput = gather ? std::vector<double>{*std::max_element(rankMax.begin(), rankMax.end())} : rankMax;
  for (size_t j = 0; j < (gather ? per * n : inElems); ++j) {
    double sum = 0;
    if (gather) {
      sum = input(static_cast<int>(j / per), j % per);
    } else {
      for (int p = 0; p < n; ++p) sum += input(p, j);
    }
    mag.maxAbsSum = std::max(mag.maxAbsSum, std::fabs(sum));
  }
  const auto mean = meanResults(spec, coll, n, per, op, calls, input);
  const std::string what = spec + " " + collName(coll) + (shape.average ? " avg" : " sum") + " n=" + std::to_string(n) +
                           " calls=" + std::to_string(calls);
  std::vector<double> xs(n);
  size_t zerosPass = 0, missingPass = 0, missingTouched = 0, nonzero = 0;
  for (int r = 0; r < n; ++r) {
    int reported = 0;
    for (size_t j = 0; j < outElems; ++j) {
      int count = n;
      if (gather) {
        xs[0] = input(static_cast<int>(j / per), j % per);
        count = 1;
      } else {
        for (int p = 0; p < n; ++p) xs[p] = input(p, scatter ? static_cast<size_t>(r) * per + j : j);
      }
      double want = 0;
      for (int p = 0; p < count; ++p) want += xs[p];
      if (shape.average) want /= n;
      const double tol = cc::elementTolerance(codec, shape, mag, xs.data(), count, calls);
      const double got = mean[r][j];
      if (!(std::fabs(got - want) <= tol) && reported++ < 5) {
        ADD_FAILURE() << what << " rank " << r << " element " << j << ": mean " << got << ", true " << want
                      << ", bound " << tol;
      }
      if (r == 0) {
        if (want != 0) ++nonzero;
        if (want != 0 && std::fabs(want) <= tol) ++zerosPass;
        const double last = xs[count - 1] / (shape.average ? n : 1);
        if (last != 0) {
          ++missingTouched;
          if (std::fabs(last) <= tol) ++missingPass;
        }
      }
    }
    if (!gather && !scatter && r > 0) {
      EXPECT_EQ(mean[r], mean[0]) << what << ": rank " << r << " differs";
    }
  }
  // On the check data the bound is below the error of a lost contribution nearly everywhere.
  if (!checkData) return;
  EXPECT_LE(zerosPass, nonzero / 100) << what << ": zeros would pass on " << zerosPass << " of " << nonzero;
  EXPECT_LE(missingPass, missingTouched / 100)
      << what << ": a missing rank would pass on " << missingPass << " of " << missingTouched;
}

// Large enough for sampled Top-K to sample (chunks of >= 2 sample sizes), small enough to stay quick.
size_t checkCount(const std::string& spec) { return spec.rfind("topk", 0) == 0 ? 70001 : 10007; }

InputFn checkData(const std::string& spec, int n) {
  const cc::Codec codec = cc::parseCodec(spec);
  return [codec, n](int p, size_t j) { return cc::checkValue(codec, p, n, j); };
}

class CompressedBound : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(CompressedBound, AllReduceMeanIsWithinTheCodecBoundOfTheTrueResult) {
  auto [spec, n] = GetParam();
  for (ternRedOp_t op : {ternSum, ternAvg}) {
    expectWithinBound(spec, Coll::kAllReduce, n, checkCount(spec), op, checkData(spec, n));
  }
}

TEST_P(CompressedBound, AllGatherIsWithinTheCodecBoundOfTheInputs) {
  auto [spec, n] = GetParam();
  expectWithinBound(spec, Coll::kAllGather, n, checkCount(spec) / n + 1, ternSum, checkData(spec, n));
}

TEST_P(CompressedBound, ReduceScatterIsWithinTheCodecBoundOfTheTrueResult) {
  auto [spec, n] = GetParam();
  for (ternRedOp_t op : {ternSum, ternAvg}) {
    expectWithinBound(spec, Coll::kReduceScatter, n, checkCount(spec) / n + 1, op, checkData(spec, n));
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, CompressedBound, everyCodecOnEveryRankCount(), codecParamName);

// The fp16/bf16 and QSGD bounds hold for any data, not only the check data: gradient-like values with three
// decimals (not representable in fp16/bf16, so every stage rounds).
TEST(CompressedBoundGeneralData, CastAndQsgdStayWithinTheirBoundsOnGradientLikeData) {
  for (const char* spec : {"fp16", "bf16", "qsgd:4", "qsgd:8"}) {
    for (int n : {1, 2, 3, 5, 8}) {
      std::vector<std::vector<float>> g(n);
      // Reduce-scatter's inputs are (10007 / n + 1) * n elements: up to n more than 10007.
      for (int p = 0; p < n; ++p) g[p] = gradient(p, 0, 10007 * n + n);
      auto cached = [&g](int p, size_t j) { return static_cast<double>(g[p][j]); };
      for (ternRedOp_t op : {ternSum, ternAvg}) {
        for (Coll c : {Coll::kAllReduce, Coll::kReduceScatter}) {
          expectWithinBound(spec, c, n, c == Coll::kAllReduce ? 10007 : 10007 / n + 1, op, cached, false);
        }
      }
      expectWithinBound(spec, Coll::kAllGather, n, 10007 / n + 1, ternSum, cached, false);
    }
  }
}

// A job checkpoints its error feedback, goes on, and is restarted from the checkpoint: the restarted run must give
// the same bits as the run that went on (residuals, server residuals and the step that seeds stochastic rounding
// all restored), and a damaged checkpoint must be refused, never half loaded.
TEST(CompressedCollectives, CheckpointRestoresTheRunBitForBit) {
  const size_t count = 4099;
  for (const char* spec : {"qsgd:4", "sign", "topk:0.05"}) {
    SCOPED_TRACE(spec);
    runOnRanks(3, Wire::kInproc, [&](ternComm_t comm, int rank) {
      const std::string s = spec;
      const std::string method = s.substr(0, s.find(':'));
      const std::string params = s.find(':') == std::string::npos ? "" : s.substr(s.find(':') + 1);
      auto create = [&] {
        ternCompressor_t c = nullptr;
        EXPECT_EQ(ternCompressorCreate(method.c_str(), params.c_str(), count, ternFloat32, &c), ternSuccess);
        return c;
      };
      auto step = [&](ternCompressor_t c, int k) {
        std::vector<float> g = gradient(rank, k, count), out(count);
        EXPECT_EQ(ternAllReduceCompressed(g.data(), out.data(), count, ternFloat32, ternAvg, c, comm), ternSuccess);
        return out;
      };
      ternCompressor_t first = create();
      for (int k = 0; k < 3; ++k) step(first, k);
      size_t bytes = 0;
      ASSERT_EQ(ternCompressorSave(first, nullptr, &bytes), ternSuccess);
      std::vector<uint8_t> checkpoint(bytes);
      ASSERT_EQ(ternCompressorSave(first, checkpoint.data(), &bytes), ternSuccess);
      ASSERT_EQ(bytes, checkpoint.size());
      std::vector<std::vector<float>> wentOn;
      for (int k = 3; k < 6; ++k) wentOn.push_back(step(first, k));
      ternCompressorDestroy(first);

      ternCompressor_t restarted = create();
      // Every truncation and a flipped byte anywhere in the residuals are refused and leave the compressor as it was.
      // Each truncation is its own allocation of exactly that size, so that a loader reading past it is caught by
      // the sanitizer builds rather than reading the rest of the real checkpoint.
      for (size_t cut = 0; cut < checkpoint.size(); cut += (cut < 64 ? 1 : 97)) {
        const std::vector<uint8_t> truncated(checkpoint.begin(), checkpoint.begin() + static_cast<long>(cut));
        EXPECT_EQ(ternCompressorLoad(restarted, truncated.data(), cut), ternInvalidArgument) << cut << " bytes";
      }
      std::vector<uint8_t> damaged = checkpoint;
      damaged[damaged.size() / 2] ^= 0x40;
      EXPECT_EQ(ternCompressorLoad(restarted, damaged.data(), damaged.size()), ternInvalidArgument);
      ASSERT_EQ(ternCompressorLoad(restarted, checkpoint.data(), checkpoint.size()), ternSuccess);
      for (int k = 3; k < 6; ++k) {
        const std::vector<float> out = step(restarted, k);
        EXPECT_EQ(std::memcmp(out.data(), wentOn[k - 3].data(), count * sizeof(float)), 0) << "step " << k;
      }
      // A checkpoint of another tensor size is refused by name.
      ternCompressor_t other = nullptr;
      ASSERT_EQ(ternCompressorCreate(method.c_str(), params.c_str(), count + 1, ternFloat32, &other), ternSuccess);
      EXPECT_EQ(ternCompressorLoad(other, checkpoint.data(), checkpoint.size()), ternInvalidArgument);
      EXPECT_NE(std::strstr(ternGetLastError(nullptr), "elements"), nullptr) << ternGetLastError(nullptr);
      ternCompressorDestroy(other);
      ternCompressorDestroy(restarted);
    });
  }
}

TEST(CompressedCollectives, BadArgumentsAreRejected) {
  runOnRanks(2, Wire::kInproc, [&](ternComm_t comm, int) {
    ternCompressor_t c = nullptr;
    EXPECT_EQ(ternCompressorCreate("zip", nullptr, 10, ternFloat32, &c), ternInvalidArgument);
    EXPECT_EQ(ternCompressorCreate("sign", nullptr, 10, ternInt32, &c), ternInvalidArgument);
    ASSERT_EQ(ternCompressorCreate("qsgd", "4", 10, ternFloat32, &c), ternSuccess);
    float x[20] = {};
    EXPECT_EQ(ternAllReduceCompressed(x, x, 20, ternFloat32, ternSum, c, comm), ternInvalidArgument);
    EXPECT_NE(std::strstr(ternGetLastError(comm), "created for 10"), nullptr);
    EXPECT_EQ(ternAllReduceCompressed(x, x, 10, ternFloat32, ternMax, c, comm), ternInvalidArgument);
    EXPECT_EQ(ternAllReduceCompressed(x, x, 10, ternFloat32, ternSum, nullptr, comm), ternInvalidArgument);
    // Checkpoint round trip.
    size_t bytes = 0;
    ASSERT_EQ(ternCompressorSave(c, nullptr, &bytes), ternSuccess);
    std::vector<char> buf(bytes);
    ASSERT_EQ(ternCompressorSave(c, buf.data(), &bytes), ternSuccess);
    ASSERT_EQ(ternCompressorLoad(c, buf.data(), bytes), ternSuccess);
    EXPECT_EQ(ternCompressorLoad(c, buf.data(), 8), ternInvalidArgument);
    ternCompressorDestroy(c);
  });
}

}  // namespace
}  // namespace tern
