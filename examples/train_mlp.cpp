// train_mlp: trains a small MLP on synthetic sparse classification data across ranks with tern's training layers
// (DDP, ZeRO 1-3 or MoE), printing per epoch the loss, accuracy and the step time split into compute and exposed
// communication (the time the step spent waiting for communication it could not overlap).
//
//   tern-run -n 2 build/bin/train_mlp --mode ddp --compress sign
//   build/bin/train_mlp --ranks 2 --mode zero3          # ranks as threads of one process, no launcher
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "mlp/trainer.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct EpochTotals {
  double loss = 0, correct = 0, samples = 0, stepSeconds = 0, waitSeconds = 0, steps = 0;
};

std::unique_ptr<mlp::Trainer> makeTrainer(ternComm_t comm, const mlp::Options& opt) {
  if (opt.mode == "ddp") return mlp::makeDdpTrainer(comm, opt);
  if (opt.mode == "zero1") return mlp::makeZeroTrainer(comm, opt, 1);
  if (opt.mode == "zero2") return mlp::makeZeroTrainer(comm, opt, 2);
  if (opt.mode == "zero3") return mlp::makeZeroTrainer(comm, opt, 3);
  if (opt.mode == "moe") return mlp::makeMoeTrainer(comm, opt);
  throw std::invalid_argument("--mode " + opt.mode + ": expected ddp, zero1, zero2, zero3 or moe");
}

// Sums values over ranks (in place).
void sumOverRanks(std::vector<double>& v, ternComm_t comm) {
  if (ternAllReduce(v.data(), v.data(), v.size(), ternFloat64, ternSum, comm) != ternSuccess) {
    throw std::runtime_error(std::string("ternAllReduce: ") + ternGetLastError(comm));
  }
}

int train(ternComm_t comm, const mlp::Options& opt, int epochs, size_t globalBatch, size_t trainSamples,
          size_t testSamples) {
  int rank = 0, nranks = 1;
  ternCommUserRank(comm, &rank);
  ternCommCount(comm, &nranks);
  if (globalBatch % nranks != 0) throw std::invalid_argument("--batch must be a multiple of the rank count");
  const size_t localBatch = globalBatch / nranks;
  auto trainer = makeTrainer(comm, opt);
  mlp::Dataset trainSet = mlp::makeDataset(opt.task, trainSamples, 0);
  mlp::Dataset testSet = mlp::makeDataset(opt.task, testSamples, 1);
  const size_t stepsPerEpoch = trainSamples / globalBatch;
  if (rank == 0) {
    std::printf(
        "train_mlp: mode %s, %d ranks, %zu parameters (%.1f MB fp32), batch %zu (%zu per rank), %zu steps"
        " per epoch, compress %s, wire %s, overlap %s, compute delay %.1f ms/layer\n",
        opt.mode.c_str(), nranks, trainer->parameterCount(), trainer->parameterCount() * 4 / 1e6, globalBatch,
        localBatch, stepsPerEpoch, opt.compress.empty() ? "none" : opt.compress.c_str(), opt.wire.c_str(),
        opt.overlap ? "on" : "off", opt.computeDelayMs);
    std::fflush(stdout);
  }

  std::vector<uint32_t> order(trainSamples);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 shuffle(opt.task.seed + 99);  // same permutation on every rank
  std::vector<float> x;
  std::vector<int32_t> y;
  EpochTotals all;
  double testAcc = 0;
  auto start = Clock::now();
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), shuffle);
    EpochTotals t;
    for (size_t s = 0; s < stepsPerEpoch; ++s) {
      if (opt.schedule == "linear") {
        // Decaying to zero anneals the gradient noise away at the end, compression's included.
        const double done = static_cast<double>((epoch - 1) * stepsPerEpoch + s) / (epochs * stepsPerEpoch);
        trainer->setLr(opt.lr * (1.0 - done));
      }
      mlp::densify(trainSet, opt.task, order, s * globalBatch + rank * localBatch, localBatch, x, y);
      auto t0 = Clock::now();
      size_t correct = 0;
      double loss = trainer->trainStep(x.data(), y.data(), localBatch, &correct);
      t.stepSeconds += std::chrono::duration<double>(Clock::now() - t0).count();
      t.waitSeconds += trainer->lastWaitSeconds();
      t.loss += loss * localBatch;
      t.correct += correct;
      t.samples += localBatch;
      t.steps += 1;
    }
    // Evaluation on this rank's slice of the test set (all ranks run the same number of batches).
    double testCorrect = 0, testLoss = 0, testSeen = 0;
    std::vector<uint32_t> testOrder(testSamples);
    std::iota(testOrder.begin(), testOrder.end(), 0);
    const size_t perRank = testSamples / nranks;
    for (size_t first = 0; first < perRank; first += localBatch) {
      size_t n = std::min(localBatch, perRank - first);
      mlp::densify(testSet, opt.task, testOrder, rank * perRank + first, n, x, y);
      size_t correct = 0;
      testLoss += trainer->evaluate(x.data(), y.data(), n, &correct) * n;
      testCorrect += correct;
      testSeen += n;
    }
    std::vector<double> sums = {t.loss,      t.correct, t.samples,     testLoss,
                                testCorrect, testSeen,  t.stepSeconds, t.waitSeconds};
    sumOverRanks(sums, comm);
    testAcc = 100.0 * sums[4] / sums[5];
    const double stepMs = 1e3 * sums[6] / (t.steps * nranks), waitMs = 1e3 * sums[7] / (t.steps * nranks);
    if (rank == 0) {
      std::printf(
          "epoch %d/%d  loss %.4f  train_acc %.2f%%  test_loss %.4f  test_acc %.2f%%  |  step %.1f ms ="
          " compute %.1f ms + exposed comm %.1f ms\n",
          epoch, epochs, sums[0] / sums[2], 100.0 * sums[1] / sums[2], sums[3] / sums[5], testAcc, stepMs,
          stepMs - waitMs, waitMs);
      std::fflush(stdout);
    }
    all.stepSeconds += sums[6] / nranks;
    all.waitSeconds += sums[7] / nranks;
    all.steps += t.steps;
  }
  double wall = std::chrono::duration<double>(Clock::now() - start).count();
  std::string report = trainer->report();
  if (rank == 0) {
    std::printf("%s\n", report.c_str());
    const double stepMs = 1e3 * all.stepSeconds / all.steps, waitMs = 1e3 * all.waitSeconds / all.steps;
    std::printf(
        "summary mode=%s compress=%s overlap=%d ranks=%d params=%zu test_acc=%.2f step_ms=%.2f"
        " compute_ms=%.2f exposed_comm_ms=%.2f wall_s=%.1f\n",
        opt.mode.c_str(), opt.compress.empty() ? "none" : opt.compress.c_str(), opt.overlap ? 1 : 0, nranks,
        trainer->parameterCount(), testAcc, stepMs, stepMs - waitMs, waitMs, wall);
    std::fflush(stdout);
  }
  return 0;
}

bool underLauncher() {
  for (const char* v : {"TERN_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  mlp::Options opt;
  int epochs = 3, ranks = 1;
  size_t batch = 128, trainSamples = 16384, testSamples = 4096;
  bool noOverlap = false;
  CLI::App app{"Train a small MLP across ranks with tern's DDP / ZeRO / MoE layers"};
  app.add_option("--mode", opt.mode, "ddp, zero1, zero2, zero3 or moe")->capture_default_str();
  app.add_option("--compress", opt.compress, "gradient codec: sign, qsgd:4, topk:0.01, fp16, bf16 (ddp, moe)");
  app.add_flag("--no-overlap", noOverlap, "launch gradient buckets only after backward (for comparison)");
  app.add_option("--epochs", epochs, "epochs")->capture_default_str();
  app.add_option("--batch", batch, "global batch size (split over ranks)")->capture_default_str();
  app.add_option("--hidden", opt.hidden, "hidden layer width")->capture_default_str();
  app.add_option("--hidden-layers", opt.hiddenLayers, "hidden layers (ddp, zero)")->capture_default_str();
  app.add_option("--features", opt.task.features, "input features (sparse)")->capture_default_str();
  app.add_option("--classes", opt.task.classes, "classes")->capture_default_str();
  app.add_option("--nnz", opt.task.nnz, "active features per sample")->capture_default_str();
  app.add_option("--pool", opt.task.poolSize, "informative features per class")->capture_default_str();
  app.add_option("--signal", opt.task.signal, "probability that an active feature is informative")
      ->capture_default_str();
  app.add_option("--train-samples", trainSamples, "training samples")->capture_default_str();
  app.add_option("--test-samples", testSamples, "test samples")->capture_default_str();
  app.add_option("--lr", opt.lr, "learning rate")->capture_default_str();
  app.add_option("--lr-schedule", opt.schedule, "linear (decay to 0 over the run) or constant")
      ->capture_default_str()
      ->check(CLI::IsMember({"linear", "constant"}));
  app.add_option("--momentum", opt.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--weight-decay", opt.weightDecay, "weight decay")->capture_default_str();
  app.add_option("--optimizer", opt.optimizer, "sgd, adam or adamw")->capture_default_str();
  app.add_option("--compute-delay-ms", opt.computeDelayMs,
                 "artificial compute per layer and pass (emulates a bigger"
                 " model)")
      ->capture_default_str();
  app.add_option("--bucket-mb", opt.bucketMb, "gradient bucket size in MB (default: TERN_BUCKET_MB or 25)");
  app.add_option("--wire", opt.wire, "gradient type on the wire without compression: fp32, fp16, bf16 (ddp)")
      ->capture_default_str();
  app.add_option("--accumulate", opt.accumulate, "micro-steps per gradient synchronisation (ddp)")
      ->capture_default_str();
  app.add_option("--experts", opt.experts, "MoE experts (default 2 per rank)");
  app.add_option("--capacity", opt.capacity, "MoE capacity factor")->capture_default_str();
  app.add_option("--seed", opt.task.seed, "task seed")->capture_default_str();
  app.add_option("--ranks", ranks, "without a launcher: run this many ranks as threads of this process")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  opt.overlap = !noOverlap;

  try {
    if (underLauncher()) {
      ternComm_t comm = nullptr;
      if (ternCommInitFromEnv(&comm, nullptr) != ternSuccess) {
        std::fprintf(stderr, "train_mlp: init: %s\n", ternGetLastError(nullptr));
        return 1;
      }
      int rc = train(comm, opt, epochs, batch, trainSamples, testSamples);
      ternCommDestroy(comm);
      return rc;
    }
    ternUniqueId id;
    if (ternGetUniqueId(&id) != ternSuccess) {
      std::fprintf(stderr, "train_mlp: ternGetUniqueId: %s\n", ternGetLastError(nullptr));
      return 1;
    }
    std::vector<std::thread> threads;
    std::vector<int> rcs(ranks, 1);
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        ternComm_t comm = nullptr;
        if (ternCommInitRank(&comm, ranks, id, r) != ternSuccess) {
          std::fprintf(stderr, "train_mlp: rank %d init: %s\n", r, ternGetLastError(nullptr));
          return;
        }
        try {
          rcs[r] = train(comm, opt, epochs, batch, trainSamples, testSamples);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "train_mlp: rank %d: %s\n", r, e.what());
          ternCommAbort(comm);
          return;
        }
        ternCommDestroy(comm);
      });
    }
    for (auto& t : threads) t.join();
    return *std::max_element(rcs.begin(), rcs.end());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_mlp: %s\n", e.what());
    return 1;
  }
}
