// moe_step: the communication of one mixture-of-experts layer step through tern::train::Moe (libtern_train), the
// MoE dispatch/combine of the training layer: dispatch (an alltoall of per-expert counts, then an alltoallv of token
// rows), combine, and their two backward exchanges. The experts are an element-wise scale, so the time is the
// exchanges' (and the routing's copies), which is what the all-to-all path decides.
//
//   tern-run -n 4 moe_step --tokens 2048 --hidden 1024 --experts-per-rank 2 --top-k 2 -n 50 -w 10
//
// Routing is deterministic (a hash of rank, step and token), roughly balanced, so every rank sends every peer a
// different number of rows, as a real router does. Prints one line: the median and mean step time over the timed
// steps (each step's time is the slowest rank's), and the bytes each rank sent per step.
#include <tern/tern.h>
#include <tern/train.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

void check(ternResult_t r, ternComm_t comm, const char* what) {
  if (r == ternSuccess) return;
  std::fprintf(stderr, "moe_step: %s: %s (%s)\n", what, ternGetErrorString(r), comm ? ternGetLastError(comm) : "");
  std::exit(3);
}

uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

int main(int argc, char** argv) {
  size_t tokens = 2048, hidden = 1024;
  int expertsPerRank = 2, topK = 2, iters = 50, warmup = 10;
  float capacity = 1.25f;
  CLI::App app{"One MoE layer step's exchanges (tern::train::Moe), median step time"};
  app.add_option("--tokens", tokens, "tokens per rank per step")->capture_default_str();
  app.add_option("--hidden", hidden, "fp32 elements per token")->capture_default_str();
  app.add_option("--experts-per-rank", expertsPerRank, "experts each rank owns")->capture_default_str();
  app.add_option("--top-k", topK, "experts per token")->capture_default_str();
  app.add_option("--capacity", capacity, "capacity factor (<= 0: unlimited)")->capture_default_str();
  app.add_option("-n,--iters", iters, "timed steps")->capture_default_str();
  app.add_option("-w,--warmup_iters", warmup, "untimed steps")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (tokens == 0 || hidden == 0 || expertsPerRank < 1 || topK < 1 || iters < 1 || warmup < 0) {
    std::fprintf(stderr, "moe_step: bad arguments\n");
    return 2;
  }

  ternComm_t comm = nullptr;
  check(ternCommInitFromEnv(&comm, nullptr), nullptr, "ternCommInitFromEnv (run it under tern-run)");
  int rank = 0, nranks = 1;
  check(ternCommUserRank(comm, &rank), comm, "ternCommUserRank");
  check(ternCommCount(comm, &nranks), comm, "ternCommCount");
  const int experts = expertsPerRank * nranks;
  topK = std::min(topK, experts);

  ternMoeConfig_t config;
  ternMoeConfigDefault(&config);
  config.numExperts = experts;
  config.topK = topK;
  config.capacityFactor = capacity;
  config.hidden = hidden;
  ternMoe_t moe = nullptr;
  check(ternMoeCreate(comm, &config, &moe), comm, "ternMoeCreate");

  std::vector<float> x(tokens * hidden), out(tokens * hidden), grad(tokens * hidden), gradIn(tokens * hidden);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(mix(static_cast<uint32_t>(i + rank)) % 1000) / 1000;
  std::fill(grad.begin(), grad.end(), 1.0f);
  std::vector<int> ids(tokens * topK);
  std::vector<float> gates(tokens * topK, 1.0f / static_cast<float>(topK));

  // Per phase, this rank's seconds in the timed steps: routing (the benchmark's own), the four exchanges, experts.
  const char* const phaseNames[] = {"route", "dispatch", "experts", "combine", "combine_bw", "dispatch_bw"};
  constexpr int kPhases = 6;
  double phaseSeconds[kPhases] = {};
  bool timing = false;
  double mark = 0;
  auto lap = [&](int phase) {
    const double t = now();
    if (timing) phaseSeconds[phase] += t - mark;
    mark = t;
  };

  // The experts: each local expert doubles its rows, forward (inputs -> outputs) and backward (output gradients ->
  // input gradients), through the C API's accessors.
  using Rows = ternResult_t (*)(ternMoe_t, int, const float**);
  using Out = ternResult_t (*)(ternMoe_t, int, float**);
  auto runExperts = [&](Rows rowsOf, Out outOf, const char* what) {
    for (int j = 0; j < expertsPerRank; ++j) {
      size_t count = 0;
      const float* in = nullptr;
      float* o = nullptr;
      check(ternMoeExpertTokens(moe, j, &count), comm, "ternMoeExpertTokens");
      check(rowsOf(moe, j, &in), comm, what);
      check(outOf(moe, j, &o), comm, what);
      for (size_t i = 0; i < count * hidden; ++i) o[i] = 2.0f * in[i];
    }
  };

  auto step = [&](int s) {
    mark = now();
    for (size_t t = 0; t < tokens; ++t) {
      const uint32_t h = mix(static_cast<uint32_t>((rank * 7919 + s) * 104729) ^ static_cast<uint32_t>(t));
      for (int k = 0; k < topK; ++k) ids[t * topK + k] = static_cast<int>((h + static_cast<uint32_t>(k)) % experts);
    }
    lap(0);
    check(ternMoeDispatch(moe, x.data(), tokens, ids.data(), gates.data()), comm, "ternMoeDispatch");
    lap(1);
    runExperts(ternMoeExpertInput, ternMoeExpertOutput, "ternMoeExpertInput/Output");
    lap(2);
    check(ternMoeCombine(moe, out.data()), comm, "ternMoeCombine");
    lap(3);
    check(ternMoeCombineBackward(moe, grad.data(), nullptr), comm, "ternMoeCombineBackward");
    lap(4);
    runExperts(ternMoeExpertGradOutput, ternMoeExpertGradInput, "ternMoeExpertGradOutput/GradInput");
    lap(2);
    check(ternMoeDispatchBackward(moe, gradIn.data()), comm, "ternMoeDispatchBackward");
    lap(5);
  };

  for (int s = 0; s < warmup; ++s) step(s);
  std::vector<double> times;
  timing = true;
  for (int s = 0; s < iters; ++s) {
    check(ternBarrier(comm), comm, "ternBarrier");
    const double t0 = now();
    step(warmup + s);
    double dt = now() - t0, slowest = 0;
    check(ternAllReduce(&dt, &slowest, 1, ternFloat64, ternMax, comm), comm, "ternAllReduce");
    times.push_back(slowest);
  }
  ternMoeStats_t stats{};
  check(ternMoeGetStats(moe, &stats), comm, "ternMoeGetStats");
  std::sort(times.begin(), times.end());
  double mean = 0;
  for (double t : times) mean += t;
  mean /= static_cast<double>(times.size());
  if (rank == 0) {
    // Rows leave a rank in dispatch and combine-backward and return in combine and dispatch-backward; the count
    // includes the rows a rank routes to its own experts.
    const double sent = 2.0 * static_cast<double>(stats.assignments - stats.dropped) * static_cast<double>(hidden) * 4;
    std::printf(
        "moe_step ranks %d tokens %zu hidden %zu experts %d top_k %d: median %.1f us mean %.1f us "
        "(%d steps), rank 0 moves %.2f MB of rows per step (its own included), dropped %zu of %zu\n",
        nranks, tokens, hidden, experts, topK, times[times.size() / 2] * 1e6, mean * 1e6, iters, sent / 1e6,
        stats.dropped, stats.assignments);
    std::printf("moe_step rank 0 mean per step:");
    for (int p = 0; p < kPhases; ++p) std::printf(" %s %.1f us", phaseNames[p], phaseSeconds[p] / iters * 1e6);
    std::printf("\n");
  }
  ternMoeDestroy(moe);
  ternCommDestroy(comm);
  return 0;
}
