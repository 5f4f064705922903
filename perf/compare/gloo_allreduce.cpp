// gloo_allreduce: the Gloo baseline for tern's TCP allreduce claims.
//
// Prints a table in the nccl-tests style (one row per message size) so perf/compare/common.sh parses it with the
// same code as tern's all_reduce_perf. Deliberately standalone: it must not link tern, because it exists to measure
// something tern is compared against, and it has to build while tern itself is mid-edit.
//
//   gloo_allreduce --rank R --size N --store DIR -b 1M -e 256M -f 2 -n 20 -w 5 [--algo auto] [--inplace] [-J out.json]
//
// --algo auto (the default) is the fair baseline: gloo::allreduce() with AllreduceOptions, the call PyTorch's
// ProcessGroupGloo makes, timed with both of its algorithms (RING and BCUBE) at every size, and the faster one
// reported (a "# size ...:" line before each row says which and both times). Choosing the faster of two noisy
// measurements leans in Gloo's favour, which is the safe direction for a baseline. opts_ring / opts_bcube fix one.
// ring, ring_chunked, halving_doubling and bcube are Gloo's legacy algorithm classes (gloo::AllreduceRing & co.),
// in place only.
//
// Out of place by default (AllreduceOptions::setInput + setOutput: the input stays intact, the sum lands in a
// separate buffer), like tern's out-of-place column and mpi_allreduce's default; --inplace reduces into the input
// as PyTorch's allreduce does (compare it with tern's in-place column).
//
// Rank/size fall back to TERN_RANK/TERN_WORLD_SIZE (our launcher) and then OMPI_COMM_WORLD_RANK/SIZE (mpirun).

#include <gloo/allreduce.h>
#include <gloo/allreduce_bcube.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/config.h>
#include <gloo/math.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../common/host_buffer.hpp"
#include "driver_common.hpp"
#include "gloo_mesh.hpp"
#include "sweep_cli.hpp"

namespace {

using tern::compare::FormatTime;
using tern::compare::InputValue;
using tern::compare::Record;
using tern::compare::WriteJson;

// First set environment variable among `names`, parsed as an int.
std::optional<int> EnvInt(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return std::atoi(v);
  }
  return std::nullopt;
}

struct Options {
  int rank = -1;
  int size = -1;
  std::string store;
  std::string prefix = "gloo_allreduce";
  std::string host = "127.0.0.1";
  std::string iface;
  std::string algo = "auto";
  bool inplace = false;
  int timeout_s = 600;
  // Sizes, iterations, check, timing and JSON, as every driver takes them (sweep_cli.hpp); its collective is
  // allreduce and its root and in-place fields are unused (--inplace is this driver's own).
  tern::compare::SweepOptions sweep;
};

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

bool IsLegacy(const std::string& algo) { return algo.rfind("opts_", 0) != 0 && algo != "auto"; }

// Builds the per-size "run one allreduce" closure. Legacy algorithms (gloo::AllreduceRing & co.) are constructed once
// per size because they pre-register their buffers with the pairs; that is how they are meant to be used and what
// would be cached in a real application. They reduce in place (into `out`). The gloo::allreduce() API (what
// PyTorch's ProcessGroupGloo calls) is rebuilt per call, as its callers do; `in` == nullptr makes it in place.
std::function<void()> MakeAllreduce(const std::string& algo, const std::shared_ptr<gloo::Context>& ctx, const float* in,
                                    float* out, size_t count, std::shared_ptr<gloo::Algorithm>* keep_alive) {
  const std::vector<float*> ptrs{out};
  const int icount = static_cast<int>(count);
  if (algo == "ring") {
    *keep_alive = std::make_shared<gloo::AllreduceRing<float>>(ctx, ptrs, icount);
  } else if (algo == "ring_chunked") {
    *keep_alive = std::make_shared<gloo::AllreduceRingChunked<float>>(ctx, ptrs, icount);
  } else if (algo == "halving_doubling") {
    *keep_alive = std::make_shared<gloo::AllreduceHalvingDoubling<float>>(ctx, ptrs, icount);
  } else if (algo == "bcube") {
    *keep_alive = std::make_shared<gloo::AllreduceBcube<float>>(ctx, ptrs, icount);
  } else if (algo == "opts_ring" || algo == "opts_bcube") {
    const auto which =
        algo == "opts_ring" ? gloo::AllreduceOptions::Algorithm::RING : gloo::AllreduceOptions::Algorithm::BCUBE;
    return [ctx, in, out, count, which]() {
      gloo::AllreduceOptions opts(ctx);
      opts.setAlgorithm(which);
      // Gloo's options take non-const pointers but only read the input.
      if (in != nullptr) opts.setInput(const_cast<float*>(in), count);
      opts.setOutput(out, count);
      opts.setReduceFunction(static_cast<ReduceFn>(&gloo::sum<float>));
      gloo::allreduce(opts);
    };
  } else {
    throw std::invalid_argument("unknown --algo " + algo);
  }
  gloo::Algorithm* alg = keep_alive->get();
  return [alg]() { alg->run(); };
}

// Per-rank statistics combined across ranks: {sum, min, max, rank 0's} of the time and the total number of wrong
// elements.
struct Stats {
  double sum_s, min_s, max_s, rank0_s, wrong;
};

// Element-wise allreduce of a few doubles. Gloo splits buffers into per-rank segments and calls the reduce function
// on each piece, so the function must be strictly element-wise (one struct-wide function would read past a piece).
void AllreduceDoubles(const std::shared_ptr<gloo::Context>& ctx, double* v, size_t n, ReduceFn fn) {
  gloo::AllreduceOptions opts(ctx);
  opts.setOutput(v, n);
  opts.setReduceFunction(fn);
  gloo::allreduce(opts);
}

Stats ReduceStats(const std::shared_ptr<gloo::Context>& ctx, double seconds, long wrong) {
  double sums[3] = {seconds, ctx->rank == 0 ? seconds : 0.0, static_cast<double>(wrong)};
  double lo = seconds, hi = seconds;
  AllreduceDoubles(ctx, sums, 3, static_cast<ReduceFn>(&gloo::sum<double>));
  AllreduceDoubles(ctx, &lo, 1, static_cast<ReduceFn>(&gloo::min<double>));
  AllreduceDoubles(ctx, &hi, 1, static_cast<ReduceFn>(&gloo::max<double>));
  return Stats{sums[0], lo, hi, sums[1], sums[2]};
}

// The time a row reports, chosen by -a exactly as nccl-tests (and tern's all_reduce_perf) do, so the tools compare
// like with like: 0 rank 0's, 1 the average over ranks (the default), 2 the minimum, 3 the maximum.
double PickTime(const Stats& st, int average, int nranks) {
  switch (average) {
    case 0:
      return st.rank0_s;
    case 2:
      return st.min_s;
    case 3:
      return st.max_s;
    default:
      return st.sum_s / nranks;
  }
}

int Run(const Options& o) {
  const tern::compare::SweepOptions& w = o.sweep;

  const tern::compare::GlooMeshOptions mesh{o.store, o.prefix, o.host, o.iface, o.timeout_s};
  const auto ctx = tern::compare::ConnectGlooMesh(mesh, o.rank, o.size);

  const int n = o.size;
  const double bus_factor = n > 1 ? 2.0 * (n - 1) / n : 1.0;
  // Legacy algorithms have no out-of-place form.
  const bool inplace = o.inplace || IsLegacy(o.algo);
  const std::vector<std::string> candidates =
      o.algo == "auto" ? std::vector<std::string>{"opts_ring", "opts_bcube"} : std::vector<std::string>{o.algo};
  if (o.rank == 0) {
    std::printf(
        "# gloo_allreduce: Gloo %d.%d.%d, algo=%s, transport=tcp (%s), nranks=%d, iters=%d, warmup=%d, "
        "check=%d, average=%d, %s\n",
        GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, GLOO_VERSION_PATCH,
        o.algo == "auto" ? "auto (gloo::allreduce, faster of opts_ring and opts_bcube per size)" : o.algo.c_str(),
        o.iface.empty() ? o.host.c_str() : ("iface " + o.iface).c_str(), n, w.iters, w.warmup, w.check, w.average,
        inplace ? (IsLegacy(o.algo) ? "in-place (legacy algorithms have no out-of-place form)" : "in-place")
                : "out-of-place");
    std::printf("#\n");
    std::printf("#       size         count      type   redop     time   algbw   busbw #wrong\n");
    std::printf("#        (B)    (elements)                        (us)  (GB/s)  (GB/s)\n");
    std::fflush(stdout);
  }

  // Buffers sized for the largest message, allocated as tern's perf binaries allocate theirs (host_buffer.hpp).
  const size_t max_bytes_alloc = std::max<size_t>(w.max_bytes / sizeof(float), 1) * sizeof(float);
  tern::perf::HostBuffer out_buf = tern::perf::allocateHostBuffer(max_bytes_alloc);
  tern::perf::HostBuffer in_buf;
  if (!inplace) in_buf = tern::perf::allocateHostBuffer(max_bytes_alloc);
  float* out = reinterpret_cast<float*>(out_buf.get());
  float* in = inplace ? nullptr : reinterpret_cast<float*>(in_buf.get());

  std::vector<Record> records;
  double busbw_sum = 0;
  size_t size_index = 0;
  for (size_t bytes = w.min_bytes; bytes <= w.max_bytes;) {
    const size_t count = bytes / sizeof(float);
    if (count > 0) {
      // In place, every call multiplies the data by n; start each algorithm from the input pattern so values stay
      // normal floats for the warmup (they may reach inf late in long runs, which costs x86 nothing, unlike
      // denormals). Out of place, the input is written once and never changes.
      float* input = inplace ? out : in;
      auto fill = [&]() {
        for (size_t i = 0; i < count; ++i) input[i] = InputValue(o.rank, i);
      };
      if (!inplace) fill();

      // Per candidate: its check result and its time. With two candidates, which goes first alternates by size so
      // neither always meets the machine in the state the other left it.
      std::vector<double> seconds(candidates.size(), 0.0);
      long wrong_all = w.check ? 0 : -1;
      for (size_t k = 0; k < candidates.size(); ++k) {
        const size_t c = (size_index % 2 == 0) ? k : candidates.size() - 1 - k;
        std::shared_ptr<gloo::Algorithm> keep_alive;
        auto allreduce = MakeAllreduce(candidates[c], ctx, in, out, count, &keep_alive);

        long wrong = 0;
        if (w.check) {
          if (inplace) {
            fill();
          } else {
            std::memset(out, 0, count * sizeof(float));
          }
          allreduce();
          const float ranks_sum = static_cast<float>(n * (n + 1) / 2);
          for (size_t i = 0; i < count; ++i) {
            if (out[i] != ranks_sum * static_cast<float>(i % 1021 + 1)) ++wrong;
          }
        }
        if (inplace) fill();
        for (int i = 0; i < w.warmup; ++i) allreduce();
        allreduce();  // the sync before the timed loop, as nccl-tests (and tern's perf binaries) do it
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < w.iters; ++i) allreduce();
        const auto t1 = std::chrono::steady_clock::now();
        const Stats st = ReduceStats(ctx, std::chrono::duration<double>(t1 - t0).count() / w.iters, wrong);
        seconds[c] = PickTime(st, w.average, n);
        if (w.check) wrong_all += static_cast<long>(st.wrong);
      }
      // Every rank saw the same combined times, so every rank picks the same candidate.
      const size_t best = static_cast<size_t>(std::min_element(seconds.begin(), seconds.end()) - seconds.begin());
      const double sec = seconds[best];
      const double algbw = static_cast<double>(count * sizeof(float)) / 1e9 / sec;
      Record r{count * sizeof(float), count, sec * 1e6, algbw, algbw * bus_factor, wrong_all, candidates[best]};
      records.push_back(r);
      busbw_sum += r.busbw;
      if (o.rank == 0) {
        if (candidates.size() > 1) {
          std::printf("# size %zu:", r.bytes);
          for (size_t c = 0; c < candidates.size(); ++c) {
            std::printf(" %s %s us%s", candidates[c].c_str(), FormatTime(seconds[c] * 1e6).c_str(),
                        c + 1 < candidates.size() ? "," : "");
          }
          std::printf(" -> %s\n", candidates[best].c_str());
        }
        std::printf("%12zu  %12zu  %8s  %6s  %7s  %6.2f  %6.2f  %5s\n", r.bytes, r.count, "float", "sum",
                    FormatTime(r.time_us).c_str(), r.algbw, r.busbw,
                    r.wrong < 0 ? "N/A" : std::to_string(r.wrong).c_str());
        std::fflush(stdout);
      }
      ++size_index;
    }
    const size_t next = static_cast<size_t>(static_cast<double>(bytes) * w.step_factor);
    bytes = next > bytes ? next : bytes + 1;
  }

  long total_wrong = 0;
  for (const auto& r : records) total_wrong += std::max(r.wrong, 0L);
  if (o.rank == 0) {
    std::printf("# Out of bounds values : %ld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
    std::printf("# Avg bus bandwidth    : %g\n", records.empty() ? 0.0 : busbw_sum / records.size());
    std::printf("#\n");
    if (!w.json.empty()) WriteJson("gloo_allreduce", w.json, records);
  }
  tern::compare::GlooBarrier(ctx);
  return total_wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Gloo allreduce (float32 sum) over TCP, nccl-tests style table"};
  app.add_option("--rank", o.rank, "this process's rank (default: TERN_RANK, OMPI_COMM_WORLD_RANK)");
  app.add_option("--size", o.size, "number of ranks (default: TERN_WORLD_SIZE, OMPI_COMM_WORLD_SIZE)");
  app.add_option("--store", o.store, "FileStore rendezvous directory shared by all ranks");
  app.add_option("--prefix", o.prefix, "key prefix inside the store (distinct concurrent jobs need distinct ones)")
      ->capture_default_str();
  app.add_option("--host", o.host, "address to bind the TCP device to")->capture_default_str();
  app.add_option("--iface", o.iface, "network interface to bind to (overrides --host)");
  app.add_option("--algo", o.algo,
                 "auto (gloo::allreduce, faster of opts_ring/opts_bcube per size) | opts_ring | opts_bcube | legacy "
                 "(in place): ring | ring_chunked | halving_doubling | bcube")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "opts_ring", "opts_bcube", "ring", "ring_chunked", "halving_doubling", "bcube"}));
  app.add_flag("--inplace", o.inplace, "reduce into the input buffer (default: out of place, setInput + setOutput)");
  tern::compare::SweepArgs sweep_args;
  sweep_args.min_bytes = "1M";
  tern::compare::AddSweepOptions(app, o.sweep, sweep_args, nullptr);
  app.add_option("--timeout", o.timeout_s, "Gloo operation timeout, seconds")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  o.sweep.coll = *tern::compare::FindColl("allreduce");
  std::string bad = tern::compare::FinishSweepOptions(o.sweep, sweep_args, false);
  // The legacy algorithms keep byte counts in an int (AllreduceRing::bytes_), so 2 GiB and up would silently wrap.
  if (bad.empty() && o.sweep.max_bytes >= (size_t{1} << 31))
    bad = "sizes must stay below 2 GiB (Gloo stores them as int)";
  if (!bad.empty()) {
    std::fprintf(stderr, "gloo_allreduce: %s\n", bad.c_str());
    return 2;
  }

  if (o.rank < 0) o.rank = EnvInt({"TERN_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}).value_or(-1);
  if (o.size < 0) o.size = EnvInt({"TERN_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}).value_or(-1);
  if (o.rank < 0 || o.size < 1 || o.rank >= o.size) {
    std::fprintf(stderr, "gloo_allreduce: need --rank/--size (or TERN_RANK/TERN_WORLD_SIZE), got rank=%d size=%d\n",
                 o.rank, o.size);
    return 2;
  }
  if (o.store.empty()) {
    // Under mpirun every rank sees the same job id, which makes a safe private default.
    if (const char* job = std::getenv("OMPI_MCA_ess_base_jobid")) {
      o.store = std::filesystem::temp_directory_path() / ("gloo_allreduce." + std::string(job));
    } else {
      std::fprintf(stderr, "gloo_allreduce: --store DIR is required (a directory every rank can see)\n");
      return 2;
    }
  }
  try {
    return Run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_allreduce[%d]: %s\n", o.rank, e.what());
    return 1;
  }
}
