#include "training_report.hpp"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "compress/codec_cost.hpp"
#include "base/error.hpp"
#include "explain.hpp"
#include "planner/training.hpp"
#include "planner/units.hpp"
#include "text_table.hpp"

namespace tern::calc {

using namespace tern::planner;

namespace {

std::string pct(double x) { return formatNumber(100.0 * x, 3) + "%"; }

double bytesPerElement(const std::string& dtype) {
  if (dtype == "fp32" || dtype == "float" || dtype == "float32") return 4;
  if (dtype == "fp16" || dtype == "half" || dtype == "bf16" || dtype == "bfloat16") return 2;
  throwError(ternInvalidArgument, "unknown --grad-dtype '%s' (fp32, fp16, bf16)", dtype.c_str());
}

struct ScalePoint {
  int nodes;
  int ranks;
  StepTime step;
};

std::vector<int> nodeCounts(int most) {
  std::vector<int> out;
  for (int n = 1; n <= most; n = n < 8 ? n + 1 : n * 2) out.push_back(n);
  if (out.back() != most) out.push_back(most);
  return out;
}

}  // namespace

int runTrainingReport(const Options& o, const Setup& s) {
  TrainingInputs in;
  in.params = parseCount(o.modelParams);
  if (in.params < 1) throwError(ternInvalidArgument, "--model-params must be at least 1");
  in.gradBytesPerElement = bytesPerElement(o.gradDtype);
  if (o.computeMs < 0) throwError(ternInvalidArgument, "training mode needs --compute-ms (compute time per step)");
  in.computeSeconds = o.computeMs * 1e-3;
  in.overlap = o.overlap;
  in.algorithm = o.algo;
  const double grad = gradientBytes(in);
  Planner planner(s.config());
  const int P = planner.nranks(), N = planner.numHosts();
  const int g = std::max(1, P / std::max(1, N));
  const StepTime now = stepTime(planner, in);
  const double line = networkLineRate(planner);
  const int perNic = std::max(1, ranksPerNic(planner));
  const double price = o.gpuHourPrice;
  auto cost = [&](const StepTime& st, int ranks) { return price * ranks * st.stepSeconds * 1000 / 3600; };

  // Scaling over node counts: the preset/flags cluster rebuilt, or the first hosts of a file.
  int most = o.maxNodes > 0 ? o.maxNodes : N;
  if (!s.spec && most > static_cast<int>(s.job->hosts.size())) most = static_cast<int>(s.job->hosts.size());
  std::vector<ScalePoint> scaling;
  for (int n : nodeCounts(most)) {
    PlannerConfig cfg = s.config(s.spec ? 0 : n);
    if (s.spec) {
      ClusterSpec spec = *s.spec;
      spec.nodes = n;
      cfg.job = std::make_shared<const topo::JobTopology>(buildCluster(spec, s.title));
      cfg.directCandidate = cfg.directCandidate && n == 1;
    }
    Planner pn(cfg);
    scaling.push_back({n, pn.nranks(), stepTime(pn, in)});
  }

  // Alternatives: half-precision gradients, and the codecs.
  struct Alt {
    std::string name;
    double wireBytes;
    StepTime step;
    std::string error;
  };
  std::vector<Alt> alts;
  if (in.gradBytesPerElement == 4) {
    TrainingInputs half = in;
    half.gradBytesPerElement = 2;
    for (const char* name : {"fp16 gradients", "bf16 gradients"}) {
      alts.push_back({name, grad / 2, stepTime(planner, half), ""});
    }
  }
  std::vector<std::string> codecs = {"sign", "qsgd:4", "qsgd:8", "topk:0.01"};
  if (!o.compress.empty()) codecs.insert(codecs.begin(), o.compress);
  for (const std::string& spec : codecs) {
    Alt a{spec, 0, {}, ""};
    try {
      a.wireBytes = in.params * 4.0 / compress::codecCost(spec).compressionRatio;
      a.step = compressedStepTime(planner, in, spec);
    } catch (const Error& e) {
      a.error = e.what();
    }
    alts.push_back(a);
  }

  const StepTime naive = stepFor(line > 0 ? grad / line : 0, in, P);
  if (o.json) {
    nlohmann::ordered_json doc;
    doc["topology"] = {
        {"name", s.title}, {"description", s.description}, {"ranks", P}, {"hosts", N}, {"parameters", s.paramsSource}};
    doc["gradient_bytes"] = grad;
    doc["compute_ms"] = o.computeMs;
    doc["overlap"] = in.overlap;
    if (line > 0) {
      doc["naive"] = {{"line_rate_gbs", line / 1e9}, {"ms", naive.commSeconds * 1e3}, {"fraction", naive.commFraction}};
    }
    auto stepJson = [&](const StepTime& st, int ranks) {
      nlohmann::ordered_json j = {{"algorithm", st.algorithm},
                                  {"allreduce_ms", st.commSeconds * 1e3},
                                  {"exposed_ms", st.exposedSeconds * 1e3},
                                  {"step_ms", st.stepSeconds * 1e3},
                                  {"comm_fraction", st.commFraction},
                                  {"efficiency", st.efficiency},
                                  {"speedup", st.speedup}};
      if (price >= 0) j["cost_per_1k_steps"] = cost(st, ranks);
      return j;
    };
    doc["step"] = stepJson(now, P);
    nlohmann::ordered_json sc = nlohmann::ordered_json::array();
    for (const ScalePoint& sp : scaling) {
      nlohmann::ordered_json j = stepJson(sp.step, sp.ranks);
      j["nodes"] = sp.nodes;
      j["ranks"] = sp.ranks;
      sc.push_back(j);
    }
    doc["scaling"] = sc;
    nlohmann::ordered_json aj = nlohmann::ordered_json::array();
    for (const Alt& a : alts) {
      nlohmann::ordered_json j = {{"option", a.name}};
      if (!a.error.empty()) {
        j["error"] = a.error;
      } else {
        j.update(stepJson(a.step, P));
        j["wire_bytes"] = a.wireBytes;
        j["codec_ms"] = a.step.estimate.critical.codec * 1e3;
        j["saves_ms"] = (now.stepSeconds - a.step.stepSeconds) * 1e3;
      }
      aj.push_back(j);
    }
    doc["alternatives"] = aj;
    std::printf("%s\n", doc.dump(2).c_str());
    return 0;
  }

  std::printf("# tern-calc training: %s: %s\n", s.title.c_str(), s.description.c_str());
  std::printf("# %d ranks on %d host%s, parameters: %s\n", P, N, N == 1 ? "" : "s", s.paramsSource.c_str());
  std::printf("# links: %s\n\n", linksSummary(planner).c_str());
  std::printf("gradients: %s parameters x %s B (%s) = %s per step; compute %s per step; overlap %s\n",
              formatNumber(in.params / 1e6, 4).append("M").c_str(), formatNumber(in.gradBytesPerElement).c_str(),
              o.gradDtype.c_str(), formatBytes(grad).c_str(), formatTime(in.computeSeconds).c_str(),
              pct(in.overlap).c_str());
  if (line > 0) {
    std::printf("\nnaive estimate: %s / %s (%s) = %s per step -> %s of a %s step\n", formatBytes(grad).c_str(),
                formatLineRate(line).c_str(), formatRate(line).c_str(), formatTime(naive.commSeconds).c_str(),
                pct(naive.commFraction).c_str(), formatTime(naive.stepSeconds).c_str());
    if (std::fabs(line - 1.25e9) > 1) {
      const StepTime at10 = stepFor(grad / 1.25e9, in, P);
      std::printf("  the same on 10 Gb/s (1.25 GB/s): %s -> %s of a %s step\n", formatTime(at10.commSeconds).c_str(),
                  pct(at10.commFraction).c_str(), formatTime(at10.stepSeconds).c_str());
    }
    const double ringVolume = 2.0 * (P - 1) / P * grad;
    const double hierPerRank = 2.0 * (N - 1) / N * grad / g;
    std::printf("\nwhy the allreduce is not bytes / link speed:\n");
    std::printf(
        "  ring over all %d ranks: every rank sends 2(p-1)/p = %s x %s = %s. With the ranks of a node\n"
        "    adjacent in the ring, each node's NIC carries one such stream: %s / %s = %s, %s x naive.\n",
        P, formatNumber(2.0 * (P - 1) / P).c_str(), formatBytes(grad).c_str(), formatBytes(ringVolume).c_str(),
        formatBytes(ringVolume).c_str(), formatRate(line).c_str(), formatTime(ringVolume / line).c_str(),
        formatNumber(2.0 * (P - 1) / P).c_str());
    if (g > 1) {
      const std::string others =
          N == 2 ? "its peer on the other node" : format("its peers on the other %d nodes", N - 1);
      std::printf(
          "  hier: the %d ranks of a node first reduce-scatter over the intra-node links; then each allreduces\n"
          "    its 1/%d slice (%s) with %s: 2(N-1)/N x %s = %s per rank on the\n"
          "    network, %d rank%s per NIC: %s per NIC = %s.%s\n"
          "    The intra-node reduce-scatter and all-gather come on top.\n",
          g, g, formatBytes(grad / g).c_str(), others.c_str(), formatBytes(grad / g).c_str(),
          formatBytes(hierPerRank).c_str(), perNic, perNic == 1 ? "" : "s", formatBytes(hierPerRank * perNic).c_str(),
          formatTime(hierPerRank * perNic / line).c_str(),
          std::fabs(hierPerRank * perNic - grad) < 1 ? " That is exactly the naive figure." : "");
    }
    std::string model;
    for (const Estimate& e :
         planner.rank(Collective::kAllReduce, grad, in.gradBytesPerElement == 2 ? ternFloat16 : ternFloat32)) {
      if (e.error.empty()) model += (model.empty() ? "" : ", ") + e.algorithm + " " + formatTime(e.seconds);
    }
    std::printf("  the model (every schedule simulated: latency, pipelining, NIC sharing, reductions): %s\n",
                model.c_str());
  }
  std::printf(
      "\nstep with %s: allreduce %s, exposed %s, step %s, communication %s, scaling efficiency %s, %sx one GPU\n",
      now.algorithm.c_str(), formatTime(now.commSeconds).c_str(), formatTime(now.exposedSeconds).c_str(),
      formatTime(now.stepSeconds).c_str(), pct(now.commFraction).c_str(), pct(now.efficiency).c_str(),
      formatNumber(now.speedup, 3).c_str());
  if (price >= 0) {
    std::printf("cost: %s per 1000 steps on %d GPUs at %s per GPU-hour (%s of it waiting for communication)\n",
                formatNumber(cost(now, P), 4).c_str(), P, formatNumber(price).c_str(),
                formatNumber(cost(now, P) * (1 - now.efficiency), 3).c_str());
  }

  std::printf("\nscaling (batch per GPU fixed; efficiency = compute / step):\n");
  std::vector<std::string> hdr = {"nodes", "ranks", "allreduce", "algorithm", "step", "comm", "efficiency", "speedup"};
  if (price >= 0) hdr.push_back("cost/1k steps");
  TextTable st(hdr);
  for (const ScalePoint& sp : scaling) {
    std::vector<std::string> row = {std::to_string(sp.nodes),        std::to_string(sp.ranks),
                                    formatTime(sp.step.commSeconds), sp.step.algorithm,
                                    formatTime(sp.step.stepSeconds), pct(sp.step.commFraction),
                                    pct(sp.step.efficiency),         formatNumber(sp.step.speedup, 3) + "x"};
    if (price >= 0) row.push_back(formatNumber(cost(sp.step, sp.ranks), 4));
    st.add(row);
  }
  std::printf("%s", st.str().c_str());

  std::printf("\nsmaller gradients (same %d ranks; codec work on the critical path included):\n", P);
  TextTable at({"option", "on the wire", "codec work", "allreduce", "step", "comm", "saves per step"});
  at.add({"fp32 allreduce (" + now.algorithm + ")", formatBytes(grad), "-", formatTime(now.commSeconds),
          formatTime(now.stepSeconds), pct(now.commFraction), "-"});
  for (const Alt& a : alts) {
    if (!a.error.empty()) {
      at.add({a.name, "n/a", a.error});
      continue;
    }
    const double saves = now.stepSeconds - a.step.stepSeconds;
    at.add({a.name + (a.step.algorithm.empty() ? "" : " (" + a.step.algorithm + ")"), formatBytes(a.wireBytes),
            a.step.estimate.critical.codec > 0 ? formatTime(a.step.estimate.critical.codec) : "-",
            formatTime(a.step.commSeconds), formatTime(a.step.stepSeconds), pct(a.step.commFraction),
            saves >= 0 ? formatTime(saves) : "-" + formatTime(-saves) + " (slower)"});
  }
  std::printf("%s", at.str().c_str());
  return 0;
}

}  // namespace tern::calc
