// Compressed collectives on 1..8 ranks: the library's result must equal, bit for bit on every rank, the reference
// pipeline computed here with the codec API directly (two-phase for dense codecs, sparse all-gather for Top-K),
// over several steps so that error feedback (worker and server residuals) is exercised too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "compress/codec_factory.hpp"
#include "compress/error_feedback.hpp"
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
  // The library cuts the tensor into pieces of kPieceElems (BuildOptions::compressedPieceBytes, 4 MiB of fp32) and
  // runs the two-phase exchange on each; chunk c of a piece belongs to rank c.
  static constexpr size_t kPieceElems = (size_t{4} << 20) / sizeof(float);
  std::vector<float> step(const std::vector<std::vector<float>>& in, uint64_t stepIndex, bool avg) {
    std::vector<float> out(count, 0.0f);
    for (size_t base = 0; base < count; base += kPieceElems) {
      const size_t pieceCount = std::min(kPieceElems, count - base);
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

TEST_P(CompressedAllReduce, MatchesTheReferencePipelineOnEveryRankOverSteps) {
  auto [spec, n] = GetParam();
  checkAgainstReference(spec, n, 10007, 3);
}

// Larger than one pipeline piece: the pieces' chunks, scales and residuals line up with the reference's.
TEST(CompressedAllReducePieces, SeveralPiecesMatchTheReference) {
  for (const char* spec : {"sign", "qsgd:4", "bf16"}) {
    for (int n : {2, 3}) checkAgainstReference(spec, n, 2 * TwoPhaseReference::kPieceElems + 4097, 2);
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, CompressedAllReduce,
                         ::testing::Combine(::testing::Values("sign", "sign:rms", "qsgd:4", "qsgd:8", "fp16", "bf16",
                                                              "topk:0.01", "topk:0.05:exact"),
                                            ::testing::Values(1, 2, 3, 4, 8)),
                         [](const auto& info) {
                           std::string s = std::get<0>(info.param);
                           for (auto& ch : s) {
                             if (ch == ':' || ch == '.') ch = '_';
                           }
                           return s + "_n" + std::to_string(std::get<1>(info.param));
                         });

TEST(CompressedCollectives, AllGatherAndReduceScatterAreConsistentWithTheCodec) {
  const int n = 3;
  const size_t count = 4099;
  runOnRanks(n, Wire::kInproc, [&](ternComm_t comm, int rank) {
    auto codec = compress::makeCodec("bf16");
    // allgather: block of every rank, decoded from its bf16 payload
    ternCompressor_t c = nullptr;
    ASSERT_EQ(ternCompressorCreate("bf16", nullptr, count, ternFloat32, &c), ternSuccess);
    std::vector<float> mine = gradient(rank, 0, count), all(count * n);
    ASSERT_EQ(ternAllGatherCompressed(mine.data(), all.data(), count, ternFloat32, c, comm), ternSuccess)
        << ternGetLastError(comm);
    for (int p = 0; p < n; ++p) {
      std::vector<float> g = gradient(p, 0, count);
      for (size_t i = 0; i < count; i += 37) EXPECT_NEAR(all[p * count + i], g[i], std::fabs(g[i]) / 128 + 1e-6);
    }
    ternCompressorDestroy(c);
    // reduce-scatter: this rank's block of the sum
    ASSERT_EQ(ternCompressorCreate("fp16", nullptr, count * n, ternFloat32, &c), ternSuccess);
    std::vector<float> in = gradient(rank, 1, count * n), out(count);
    ASSERT_EQ(ternReduceScatterCompressed(in.data(), out.data(), count, ternFloat32, ternSum, c, comm), ternSuccess)
        << ternGetLastError(comm);
    for (size_t i = 0; i < count; i += 41) {
      float want = 0;
      for (int p = 0; p < n; ++p) want += gradient(p, 1, count * n)[rank * count + i];
      EXPECT_NEAR(out[i], want, 0.05f) << i;
    }
    ternCompressorDestroy(c);
  });
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
