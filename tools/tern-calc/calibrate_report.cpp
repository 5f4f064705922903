#include "calibrate_report.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "planner/calibration.hpp"
#include "planner/cluster_spec.hpp"
#include "planner/fit.hpp"
#include "planner/units.hpp"
#include "setup.hpp"
#include "text_table.hpp"

namespace tern::calc {

using namespace tern::planner;

namespace {

FitOptions fitOptions(const Options& o) {
  FitOptions f;
  if (!o.inter.empty()) {
    ClusterSpec spec;
    parseInter(o.inter, spec);
    f.netKind = spec.netKind;
    f.netGbps = spec.netGbps;
  }
  if (!o.minSize.empty()) f.minBytes = parseBytes(o.minSize);
  return f;
}

std::vector<PerfRun> loadRuns(const std::vector<std::string>& files, const Options& o) {
  std::vector<PerfRun> runs;
  for (const std::string& f : files) runs.push_back(loadPerfRun(f, o.nodes > 0 ? o.nodes : 1));
  return runs;
}

std::string signedPercent(double x) {
  const double pct = std::round(1000.0 * std::fabs(x)) / 10;  // one decimal
  return pct == 0 ? "0%" : (x >= 0 ? "+" : "-") + formatNumber(pct, 3) + "%";
}

std::string alphaText(double alpha) { return alpha < 1e-9 ? "0 (clamped)" : formatTime(alpha); }

double busbwOf(const FitPoint& p, double seconds) { return seconds > 0 ? p.bytes / seconds / 1e9 * p.busFactor : 0; }

void printPoints(const std::vector<FitPoint>& points) {
  TextTable t({"file", "ranks", "nodes", "transport", "algorithm", "size", "measured", "predicted", "busbw meas",
               "busbw pred", "error"});
  for (const FitPoint& p : points) {
    const bool ok = p.predicted > 0;
    t.add({std::filesystem::path(p.source).filename().string(), std::to_string(p.nranks), std::to_string(p.nodes),
           p.transport, p.algorithm, formatBytes(p.bytes), formatTime(p.measured), ok ? formatTime(p.predicted) : "n/a",
           formatNumber(busbwOf(p, p.measured), 3) + " GB/s",
           ok ? formatNumber(busbwOf(p, p.predicted), 3) + " GB/s" : "n/a",
           ok ? signedPercent(busbwOf(p, p.predicted) / busbwOf(p, p.measured) - 1) : "n/a"});
  }
  std::printf("%s", t.str().c_str());
}

nlohmann::ordered_json pointsJson(const std::vector<FitPoint>& points) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const FitPoint& p : points) {
    a.push_back({{"file", p.source},
                 {"collective", p.collective},
                 {"nranks", p.nranks},
                 {"nodes", p.nodes},
                 {"transport", p.transport},
                 {"algorithm", p.algorithm},
                 {"size", p.bytes},
                 {"measured_us", p.measured * 1e6},
                 {"predicted_us", p.predicted * 1e6},
                 {"busbw_measured", busbwOf(p, p.measured)},
                 {"busbw_predicted", busbwOf(p, p.predicted)},
                 {"busbw_error", p.predicted > 0 ? busbwOf(p, p.predicted) / busbwOf(p, p.measured) - 1 : 0}});
  }
  return a;
}

// Worst |busbw error| over the points (busbw is bytes / time, so this is |measured / predicted - 1|).
double worstError(const std::vector<FitPoint>& points) {
  double worst = 0;
  for (const FitPoint& p : points) {
    if (p.predicted > 0) worst = std::max(worst, std::fabs(p.measured / p.predicted - 1));
  }
  return worst;
}

}  // namespace

int runCalibrate(const Options& o) {
  std::string source;
  const CostParams start = loadParams(o, &source);
  const FitOptions fo = fitOptions(o);
  const std::vector<PerfRun> runs = loadRuns(o.calibrate, o);
  const FitResult fit = fitCalibration(runs, start, fo);
  nlohmann::ordered_json doc = calibrationToJson(fit.params);
  nlohmann::ordered_json info;
  info["generated_by"] = "tern-calc --calibrate";
  info["sources"] = o.calibrate;
  info["fitted"] = fit.fitted;
  info["rounds"] = fit.rounds;
  info["rms_time_error"] = fit.rmsError;
  info["max_time_error"] = fit.maxError;
  doc["fit"] = info;
  if (!o.output.empty()) {
    std::ofstream f(o.output);
    if (!f) throwError(ternInvalidArgument, "%s: cannot write the calibration file", o.output.c_str());
    f << doc.dump(2) << "\n";
  }
  if (o.json) {
    nlohmann::ordered_json out = doc;
    out["points"] = pointsJson(fit.points);
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  size_t n = 0;
  for (const PerfRun& r : runs) n += r.points.size();
  std::printf("# tern-calc --calibrate: %zu file%s, %zu measurements, starting from %s, %d round%s\n", runs.size(),
              runs.size() == 1 ? "" : "s", n, source.c_str(), fit.rounds, fit.rounds == 1 ? "" : "s");
  std::printf("fitted:\n");
  for (const auto& [name, l] : fit.params.links) {
    bool fitted = false;
    for (const std::string& f : fit.fitted) fitted |= f.rfind(name + " ", 0) == 0;
    if (!fitted) continue;
    std::string extra;
    if (l.speedGbps > 0) {
      extra =
          format(" (%s%% of the %s line rate)", formatNumber(100.0 / l.cost.beta / (l.speedGbps * 1e9 / 8), 3).c_str(),
                 formatLineRate(l.speedGbps * 1e9 / 8).c_str());
    }
    for (const CacheLevel& c : l.cache) {
      extra += ", " + formatRate(1.0 / c.beta) + " up to " + formatBytes(c.bytes) + " per rank";
    }
    std::printf("  %-18s alpha %s, bandwidth %s%s\n", name.c_str(), alphaText(l.cost.alpha).c_str(),
                formatRate(1.0 / l.cost.beta).c_str(), extra.c_str());
  }
  if (fit.params.shmDirect) {
    const DirectCost& d = *fit.params.shmDirect;
    std::string extra;
    for (const CacheLevel& c : d.cache) {
      extra += ", " + formatRate(1.0 / c.beta) + " up to " + formatBytes(c.bytes) + " per rank";
    }
    std::printf("  %-18s alpha %s, bus bandwidth %s%s\n", "shm_direct", alphaText(d.alpha).c_str(),
                formatRate(1.0 / d.beta).c_str(), extra.c_str());
  }
  for (const auto& [name, c] : fit.params.codecs) {
    std::string extra;
    for (const CacheLevel& l : c.cache) {
      extra += ", " + formatNumber(1.0 / l.beta, 3) + "x faster up to " + formatBytes(l.bytes) + " per rank";
    }
    std::printf("  codec %-12s encode %s, decode %s (fp32 bytes)%s\n", name.c_str(),
                formatRate(1.0 / c.encodeBeta).c_str(), formatRate(1.0 / c.decodeBeta).c_str(), extra.c_str());
  }
  std::printf("residuals (time: rms %s%%, max %s%%):\n", formatNumber(100 * fit.rmsError, 3).c_str(),
              formatNumber(100 * fit.maxError, 3).c_str());
  printPoints(fit.points);
  if (!o.output.empty())
    std::printf("wrote %s (use it with TERN_TUNE_FILE=%s or tern-calc --tune)\n", o.output.c_str(), o.output.c_str());
  return 0;
}

int runCheck(const Options& o) {
  std::string source;
  const CostParams params = loadParams(o, &source);
  const std::vector<PerfRun> runs = loadRuns(o.check, o);
  const std::vector<FitPoint> points = predictRuns(runs, params, fitOptions(o));
  if (o.json) {
    nlohmann::ordered_json out = {
        {"parameters", source}, {"worst_busbw_error", worstError(points)}, {"points", pointsJson(points)}};
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("# tern-calc --check: predicted vs measured, parameters: %s\n", source.c_str());
  printPoints(points);
  std::printf("worst busbw error: %s%%\n", formatNumber(100 * worstError(points), 3).c_str());
  return 0;
}

}  // namespace tern::calc
