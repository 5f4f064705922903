// Hierarchical compressed allreduce (compressed_hier): ranks of one process cannot have different host ids, so the
// schedules are built with BuildOptions::hostOf and executed together, one thread per rank over the in-process
// transport, with per-rank worker/server error feedback as the communicator keeps them. Checked two ways:
//  - against the TRUE sum/average (double, rank order) within the codec's bound (perf/common/compressed_bounds.hpp):
//    the mean of K calls with fresh residuals on the bounds' two-level check data, laid out by node (the ranks of a
//    node hold the same values, so each node sum has one magnitude and the inter-node workers are exact);
//  - the composition: every rank's bits equal the codec API composed by hand here (fp32 node sums in local-rank
//    order, the two-phase exchange of each slice across nodes, the slice copied to every rank of the node), over
//    several steps. That shares the codecs with the library: it checks the schedule, not the codecs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/compressed.hpp"
#include "base/unique_id.hpp"
#include "compress/codec_factory.hpp"
#include "compress/error_feedback.hpp"
#include "compressed_bounds.hpp"
#include "exec/executor.hpp"
#include "synthetic_gradient.hpp"
#include "transport/inproc/inproc_transport.hpp"

namespace tern {
namespace {

std::vector<float> gradient(int rank, int step, size_t n) { return testing::syntheticGradient(rank, step, n); }

constexpr uint64_t kSeed = 0x7465726e;
constexpr size_t kPieceElems = (size_t{4} << 20) / sizeof(float);  // BuildOptions::compressedPieceBytes as fp32

// The library's pieces: floor(count / kPieceElems) of them (at least one), of equal size rounded up.
size_t pieceElems(size_t count) {
  const size_t pieces = std::max<size_t>(count / kPieceElems, 1);
  return (count + pieces - 1) / pieces;
}

size_t part(size_t count, int n, int c) { return count * static_cast<size_t>(c) / static_cast<size_t>(n); }

// Ranks are laid out node by node: rank = node * g + local.
struct HierReference {
  std::unique_ptr<compress::Codec> codec;
  int nodes, g;
  size_t count;
  std::vector<compress::ErrorFeedback> worker, server;
  HierReference(const std::string& spec, int numNodes, int perNode, size_t cnt)
      : codec(compress::makeCodec(spec)),
        nodes(numNodes),
        g(perNode),
        count(cnt),
        worker(numNodes * perNode, compress::ErrorFeedback(cnt)),
        server(numNodes * perNode, compress::ErrorFeedback(cnt)) {}

  std::vector<float> step(const std::vector<std::vector<float>>& in, uint64_t stepIndex, bool avg) {
    const int n = nodes * g;
    std::vector<float> out(count, 0.0f);
    const size_t piece = pieceElems(count);
    for (size_t base = 0; base < count; base += piece) {
      const size_t pc = std::min(piece, count - base);
      for (int j = 0; j < g; ++j) {  // slice j, handled by local rank j of every node
        const size_t so = base + part(pc, g, j), sl = part(pc, g, j + 1) - part(pc, g, j);
        std::vector<std::vector<float>> nodeSum(nodes, std::vector<float>(sl));
        for (int k = 0; k < nodes; ++k) {
          for (size_t i = 0; i < sl; ++i) {
            float s = in[k * g][so + i];
            for (int l = 1; l < g; ++l) s += in[k * g + l][so + i];
            nodeSum[k][i] = s;
          }
        }
        for (int c = 0; c < nodes; ++c) {  // chunk c of the slice, reduced by node c
          const size_t co = part(sl, nodes, c), len = part(sl, nodes, c + 1) - co;
          std::vector<float> acc(len, 0.0f);
          for (int k = 0; k < nodes; ++k) {
            std::vector<uint8_t> payload(codec->payloadBytes(len));
            worker[k * g + j].encode(*codec, nodeSum[k].data() + co, ternFloat32, len, payload.data(),
                                     {kSeed, stepIndex, so + co});
            codec->decode(payload.data(), payload.size(), len, acc.data(), k > 0);
          }
          if (avg) {
            for (auto& v : acc) v = v / static_cast<float>(n);
          }
          std::vector<uint8_t> reduced(codec->payloadBytes(len));
          server[c * g + j].encode(*codec, acc.data(), ternFloat32, len, reduced.data(), {kSeed, stepIndex, so + co});
          codec->decode(reduced.data(), reduced.size(), len, out.data() + so + co, false);
        }
      }
    }
    return out;
  }
};

// Runs `steps` calls of compressed_hier on numNodes x perNode ranks with one set of residuals per rank (zero at the
// start): inputs(step) gives every rank's input, check(step, inputs, outputs) sees every rank's result.
using HierInputs = std::function<std::vector<std::vector<float>>(int step)>;
using HierCheck =
    std::function<void(int step, const std::vector<std::vector<float>>&, const std::vector<std::vector<float>>&)>;

void runHier(const std::string& spec, int numNodes, int perNode, size_t count, int steps, bool avg, bool inPlace,
             const HierInputs& inputs, const HierCheck& check) {
  const int n = numNodes * perNode;
  BuildOptions bo;
  for (int r = 0; r < n; ++r) bo.hostOf.push_back(10 + r / perNode);  // host ids need not start at 0
  auto codec = compress::makeCodec(spec);
  bo.codec = codec.get();
  CollArgs args;
  args.count = count;
  args.op = avg ? ternAvg : ternSum;
  args.inPlace = inPlace;
  ASSERT_TRUE(compressedHierApplies(args, *codec, bo.hostOf, n));
  std::vector<Schedule> schedules;
  for (int r = 0; r < n; ++r) schedules.push_back(buildCompressed(args, r, n, bo));
  ASSERT_EQ(schedules[0].algorithm, "compressed_hier");
  std::vector<compress::ErrorFeedback> worker(n, compress::ErrorFeedback(count));
  std::vector<compress::ErrorFeedback> server(n, compress::ErrorFeedback(count));
  const Secret secret = Secret::random();
  std::vector<std::unique_ptr<InprocTransport>> transports(n);
  {
    std::vector<std::thread> joins;
    for (int r = 0; r < n; ++r) joins.emplace_back([&, r] { transports[r] = InprocTransport::join(secret, r, n); });
    for (auto& t : joins) t.join();
  }
  for (int s = 0; s < steps; ++s) {
    std::vector<std::vector<float>> in = inputs(s), out(n);
    for (int r = 0; r < n; ++r) out[r] = inPlace ? in[r] : std::vector<float>(count, -1.0f);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        std::vector<char> scratch(schedules[r].scratchBytes);
        ExecContext ctx;
        ctx.transport = transports[r].get();
        ctx.dtype = ternFloat32;
        ctx.op = args.op;
        ctx.nranks = n;
        ctx.rank = r;
        ctx.deadline = Clock::now() + std::chrono::seconds(60);
        ctx.codec = codec.get();
        ctx.feedback[0] = &worker[r];
        ctx.feedback[1] = &server[r];
        ctx.seed = kSeed;
        ctx.step = static_cast<uint64_t>(s);
        const void* input = inPlace ? out[r].data() : in[r].data();
        const size_t bytes = count * sizeof(float);
        const ExecBuffers buffers{hostMemory(input, bytes), hostMemory(out[r].data(), bytes),
                                  hostMemory(scratch.data(), scratch.size())};
        try {
          executeSchedule(schedules[r], buffers, ctx);
        } catch (const std::exception& e) {
          ADD_FAILURE() << "rank " << r << ": " << e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
    check(s, in, out);
  }
}

void checkHier(const std::string& spec, int numNodes, int perNode, size_t count, int steps, bool inPlace) {
  const int n = numNodes * perNode;
  for (bool avg : {false, true}) {
    HierReference ref(spec, numNodes, perNode, count);
    runHier(
        spec, numNodes, perNode, count, steps, avg, inPlace,
        [&](int s) {
          std::vector<std::vector<float>> in(n);
          for (int r = 0; r < n; ++r) in[r] = gradient(r, s, count);
          return in;
        },
        [&](int s, const std::vector<std::vector<float>>& in, const std::vector<std::vector<float>>& out) {
          const std::vector<float> want = ref.step(in, static_cast<uint64_t>(s), avg);
          for (int r = 0; r < n; ++r) {
            ASSERT_EQ(std::memcmp(out[r].data(), want.data(), count * sizeof(float)), 0)
                << spec << " " << numNodes << "x" << perNode << " count " << count << " step " << s << " rank " << r
                << (avg ? " avg" : " sum") << (inPlace ? " in place" : "");
          }
        });
  }
}

// The mean of K calls (fresh residuals) within the codec's bound of the true result, on every rank; and the bound is
// tight enough that a result of zeros or one missing a node would fail it.
void checkHierBound(const std::string& spec, int numNodes, int perNode, size_t count, bool inPlace) {
  namespace cc = compressed_check;
  const int n = numNodes * perNode;
  const cc::Codec codec = cc::parseCodec(spec);
  const int calls = cc::checkCalls(codec, numNodes);
  auto value = [&](int rank, size_t j) { return cc::twoLevelValue(rank / perNode, numNodes, j); };
  for (bool avg : {false, true}) {
    std::vector<std::vector<double>> mean(n, std::vector<double>(count, 0.0));
    runHier(
        spec, numNodes, perNode, count, calls, avg, inPlace,
        [&](int) {
          std::vector<std::vector<float>> in(n, std::vector<float>(count));
          for (int r = 0; r < n; ++r) {
            for (size_t j = 0; j < count; ++j) in[r][j] = static_cast<float>(value(r, j));
          }
          return in;
        },
        [&](int, const std::vector<std::vector<float>>&, const std::vector<std::vector<float>>& out) {
          for (int r = 0; r < n; ++r) {
            for (size_t j = 0; j < count; ++j) mean[r][j] += out[r][j];
          }
        });
    // The inter-node exchange sees one payload per node (its node sum, of magnitude perNode).
    cc::Shape shape;
    shape.ranks = n;
    shape.average = avg;
    shape.serverStage = true;
    cc::Magnitudes mag;
    mag.maxAbsInput.assign(numNodes, static_cast<double>(perNode));
    mag.maxAbsSum = static_cast<double>(n);
    std::vector<double> nodeSums(numNodes);
    size_t zerosPass = 0, missingPass = 0, nonzero = 0;
    for (int r = 0; r < n; ++r) {
      int reported = 0;
      for (size_t j = 0; j < count; ++j) {
        double want = 0;
        for (int k = 0; k < numNodes; ++k) {
          nodeSums[k] = perNode * value(k * perNode, j);
          want += nodeSums[k];
        }
        if (avg) want /= n;
        const double tol = cc::elementTolerance(codec, shape, mag, nodeSums.data(), numNodes, calls);
        const double got = mean[r][j] / calls;
        if (!(std::fabs(got - want) <= tol) && reported++ < 5) {
          ADD_FAILURE() << spec << " " << numNodes << "x" << perNode << (avg ? " avg" : " sum") << " rank " << r
                        << " element " << j << ": mean " << got << ", true " << want << ", bound " << tol;
        }
        if (r == 0) {
          nonzero += want != 0;
          zerosPass += want != 0 && std::fabs(want) <= tol;
          missingPass += std::fabs(nodeSums[numNodes - 1] / (avg ? n : 1)) <= tol;
        }
      }
      EXPECT_EQ(mean[r], mean[0]) << "rank " << r << " differs";
    }
    EXPECT_LE(zerosPass, nonzero / 100);
    EXPECT_LE(missingPass, count / 100);
  }
}

TEST(CompressedHierAllReduce, MeanOverCallsIsWithinTheCodecBoundOfTheTrueResult) {
  for (const char* spec : {"sign", "sign:rms", "qsgd:4", "qsgd:8"}) {
    for (int nodes : {2, 3}) checkHierBound(spec, nodes, 2, 10007, false);
    checkHierBound(spec, 2, 3, 10007, true);
  }
}

TEST(CompressedHierAllReduce, MatchesTheCodecApiComposedByHandOnEveryRankOverSteps) {
  for (const char* spec : {"sign", "qsgd:4"}) {
    for (int nodes : {2, 3}) {
      checkHier(spec, nodes, 2, 10007, 3, false);
      checkHier(spec, nodes, 2, 10007, 2, true);
    }
  }
  checkHier("sign", 2, 3, 10007, 2, false);  // odd node size: slices of uneven length
}

// Larger than one pipeline piece: each piece's slices, chunks, scales and residuals line up with the hand composition.
TEST(CompressedHierAllReduce, SeveralPiecesMatchTheCodecApiComposedByHand) {
  for (const char* spec : {"sign", "qsgd:4"}) {
    for (int nodes : {2, 3}) checkHier(spec, nodes, 2, 2 * kPieceElems + 4097, 2, false);
  }
}

TEST(CompressedHierAllReduce, OnlyFp32DenseAllReduceOnEvenMultiRankNodes) {
  auto sign = compress::makeCodec("sign");
  auto topk = compress::makeCodec("topk:0.01");
  CollArgs args;
  args.count = 100;
  const std::vector<int> even{0, 0, 1, 1};
  EXPECT_TRUE(compressedHierApplies(args, *sign, even, 4));
  EXPECT_FALSE(compressedHierApplies(args, *topk, even, 4));
  EXPECT_FALSE(compressedHierApplies(args, *sign, {}, 4));               // one host
  EXPECT_FALSE(compressedHierApplies(args, *sign, {0, 0, 0, 1, 1}, 5));  // uneven nodes
  EXPECT_FALSE(compressedHierApplies(args, *sign, {0, 1, 2, 3}, 4));     // one rank per node
  EXPECT_FALSE(compressedHierApplies(args, *sign, {0, 0, 0, 0}, 4));     // one node
  args.dtype = ternBfloat16;
  EXPECT_FALSE(compressedHierApplies(args, *sign, even, 4));
  args.dtype = ternFloat32;
  args.coll = Collective::kReduceScatter;
  EXPECT_FALSE(compressedHierApplies(args, *sign, even, 4));
  EXPECT_STREQ(compressedAlgorithmFor(Collective::kAllReduce, *sign, true), "compressed_hier");
  EXPECT_STREQ(compressedAlgorithmFor(Collective::kAllReduce, *sign), "compressed_2phase");
  EXPECT_STREQ(compressedAlgorithmFor(Collective::kAllReduce, *topk, true), "sparse_allgather");
}

}  // namespace
}  // namespace tern
