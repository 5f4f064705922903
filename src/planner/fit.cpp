#include "planner/fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "algorithms/registry.hpp"
#include "core/error.hpp"
#include "planner/cluster_spec.hpp"

namespace tern::planner {

namespace {

// Compressed collectives below this size run uncompressed (TERN_COMPRESS_MIN_BYTES' default).
constexpr double kCompressMinBytes = 64 * 1024;
// Latencies never go exactly to zero: the fit reads each term's count as term / alpha.
constexpr double kMinAlpha = 1e-12;

enum class PointKind { kSchedule, kCompressed, kDirect };

PointKind kindOf(const PerfRun& run, const PerfPoint& p) {
  const bool compressible = run.collective == Collective::kAllReduce || run.collective == Collective::kAllGather ||
                            run.collective == Collective::kReduceScatter;
  if (!run.compress.empty() && compressible && p.bytes >= kCompressMinBytes) return PointKind::kCompressed;
  if (findAlgorithm(run.collective, p.algorithm) != nullptr) return PointKind::kSchedule;
  if (run.nodes == 1 && run.nranks > 1 && run.intra() != IntraTransport::kLoopback) return PointKind::kDirect;
  return PointKind::kSchedule;
}

std::unique_ptr<Planner> plannerFor(const PerfRun& run, const CostParams& params, const FitOptions& o) {
  PlannerConfig c;
  c.job = std::make_shared<const topo::JobTopology>(runJob(run, o));
  c.intra = run.intra();
  c.params = params;
  c.directCandidate = true;
  return std::make_unique<Planner>(std::move(c));
}

Estimate predictPoint(const Planner& pl, const PerfRun& run, const PerfPoint& p) {
  switch (kindOf(run, p)) {
    case PointKind::kCompressed:
      return pl.estimateCompressed(run.collective, p.bytes, run.compress);
    case PointKind::kDirect:
      return pl.estimateDirect(run.collective, p.bytes);
    case PointKind::kSchedule:
      break;
  }
  if (findAlgorithm(run.collective, p.algorithm) != nullptr) {
    return pl.estimate(run.collective, p.bytes, p.algorithm, run.dtype);
  }
  std::vector<Estimate> ranked = pl.rank(run.collective, p.bytes, run.dtype);
  if (ranked.empty()) {
    Estimate e;
    e.error = "no algorithm";
    return e;
  }
  return ranked.front();
}

std::string linkKey(ModelLink c, const FitOptions& o) {
  if (c == ModelLink::kNetwork) return std::string("network:") + topo::netKindName(o.netKind);
  return modelLinkName(c);
}

struct Unknown {
  enum Kind { kAlpha, kBeta, kCodec } kind;
  ModelLink cls = ModelLink::kShm;
  std::string key;  // link key or codec spec
  double value = 0;
  bool fixed = false;
};

// Writes the unknowns' values into params.
void applyUnknowns(const std::vector<Unknown>& u, const FitOptions& o, const std::map<std::string, CodecSpeed>& base,
                   CostParams& params) {
  for (const Unknown& x : u) {
    if (x.kind == Unknown::kCodec) {
      const CodecSpeed b = base.at(x.key);
      params.codecs[x.key] = {b.encodeBeta * x.value, b.decodeBeta * x.value};
      continue;
    }
    LinkCalibration& l = params.links[x.key];
    if (x.kind == Unknown::kAlpha) l.cost.alpha = x.value;
    if (x.kind == Unknown::kBeta) l.cost.beta = x.value;
    if (x.cls == ModelLink::kNetwork && o.netGbps > 0) l.speedGbps = o.netGbps;
  }
}

// Weighted least squares with scaled columns and a whisper of ridge (unidentifiable columns keep their value).
// rows[i] = coefficients, y[i] = target, w[i] = weight. Returns the solution for the free columns.
std::vector<double> solve(const std::vector<std::vector<double>>& rows, const std::vector<double>& y,
                          const std::vector<double>& w, const std::vector<bool>& freeCol, const std::vector<double>& prev) {
  const size_t m = prev.size();
  std::vector<double> scale(m, 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = 0; j < m; ++j) scale[j] += std::pow(w[i] * rows[i][j], 2);
  }
  std::vector<size_t> cols;
  for (size_t j = 0; j < m; ++j) {
    scale[j] = std::sqrt(scale[j]);
    if (freeCol[j] && scale[j] > 0) cols.push_back(j);
  }
  std::vector<double> out = prev;
  const size_t k = cols.size();
  if (k == 0) return out;
  std::vector<std::vector<double>> a(k, std::vector<double>(k + 1, 0));
  for (size_t i = 0; i < rows.size(); ++i) {
    double target = y[i];
    for (size_t j = 0; j < m; ++j) {
      if (std::find(cols.begin(), cols.end(), j) == cols.end()) target -= rows[i][j] * prev[j];
    }
    for (size_t r = 0; r < k; ++r) {
      const double xr = w[i] * rows[i][cols[r]] / scale[cols[r]];
      for (size_t c = 0; c < k; ++c) a[r][c] += xr * w[i] * rows[i][cols[c]] / scale[cols[c]];
      a[r][k] += xr * w[i] * target;
    }
  }
  for (size_t r = 0; r < k; ++r) a[r][r] += 1e-12;
  // Gaussian elimination with partial pivoting.
  for (size_t c = 0; c < k; ++c) {
    size_t piv = c;
    for (size_t r = c + 1; r < k; ++r) {
      if (std::fabs(a[r][c]) > std::fabs(a[piv][c])) piv = r;
    }
    std::swap(a[c], a[piv]);
    if (std::fabs(a[c][c]) < 1e-300) continue;
    for (size_t r = 0; r < k; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (size_t j = c; j <= k; ++j) a[r][j] -= f * a[c][j];
    }
  }
  for (size_t r = 0; r < k; ++r) {
    if (std::fabs(a[r][r]) > 1e-300) out[cols[r]] = a[r][k] / a[r][r] / scale[cols[r]];
  }
  return out;
}

}  // namespace

topo::JobTopology runJob(const PerfRun& run, const FitOptions& o) {
  ClusterSpec s;
  s.nodes = run.nodes;
  s.ranksPerNode = std::max(1, run.nranks / std::max(1, run.nodes));
  s.intra = run.intra() == IntraTransport::kLoopback ? IntraKind::kLoopback : IntraKind::kShm;
  s.netKind = o.netKind;
  s.netGbps = o.netGbps > 0 ? o.netGbps : topo::kUnknownNicSpeedGbps;
  return buildCluster(s, "perf");
}

std::vector<FitPoint> predictRuns(const std::vector<PerfRun>& runs, const CostParams& params, const FitOptions& o) {
  std::vector<FitPoint> out;
  for (const PerfRun& run : runs) {
    const std::unique_ptr<Planner> pl = plannerFor(run, params, o);
    for (const PerfPoint& p : run.points) {
      if (p.bytes < o.minBytes) continue;
      const Estimate e = predictPoint(*pl, run, p);
      FitPoint f;
      f.source = run.source;
      f.collective = run.collectiveName;
      f.nranks = run.nranks;
      f.nodes = run.nodes;
      f.transport = run.transport;
      f.algorithm = kindOf(run, p) == PointKind::kCompressed ? e.algorithm + " (" + run.compress + ")" : p.algorithm;
      f.bytes = p.bytes;
      f.measured = p.seconds;
      f.predicted = e.error.empty() ? e.seconds : -1;
      f.busFactor = busFactor(run.collective, run.nranks);
      out.push_back(f);
    }
  }
  return out;
}

FitResult fitCalibration(const std::vector<PerfRun>& runs, const CostParams& start, const FitOptions& o) {
  FitResult result;
  result.params = start;
  std::vector<Unknown> unknowns;
  std::map<std::string, CodecSpeed> codecBase;

  // Which classes and codecs the runs exercise, with their current (start or default) values.
  std::vector<std::pair<double, double>> direct;  // (bytes x busFactor, seconds)
  std::vector<double> directW;
  for (const PerfRun& run : runs) {
    const std::unique_ptr<Planner> pl = plannerFor(run, start, o);
    for (const PerfPoint& p : run.points) {
      if (p.bytes < o.minBytes) continue;
      const PointKind kind = kindOf(run, p);
      if (kind == PointKind::kDirect) {
        direct.emplace_back(p.bytes * busFactor(run.collective, run.nranks), p.seconds);
        continue;
      }
      const Estimate e = predictPoint(*pl, run, p);
      if (!e.error.empty()) continue;
      for (int c = 0; c < kNumModelLinks; ++c) {
        const ModelLink cls = static_cast<ModelLink>(c);
        if (e.critical.transfer[c] <= 0 && e.critical.latency[c] <= 0) continue;
        const std::string key = linkKey(cls, o);
        const bool known = std::any_of(unknowns.begin(), unknowns.end(), [&](const Unknown& u) { return u.key == key; });
        if (known) continue;
        LinkCost cur = pl->links().classCost(cls);
        if (const LinkCalibration* lc = start.find(cls, o.netKind)) cur = lc->cost;
        unknowns.push_back({Unknown::kAlpha, cls, key, std::max(cur.alpha, kMinAlpha)});
        unknowns.push_back({Unknown::kBeta, cls, key, cur.beta});
      }
      if (kind == PointKind::kCompressed && e.critical.codec > 0 && !codecBase.count(run.compress)) {
        codecBase[run.compress] = codecSpeed(start, run.compress);
        unknowns.push_back({Unknown::kCodec, ModelLink::kShm, run.compress, 1.0});
      }
    }
  }
  if (unknowns.empty() && direct.empty()) {
    throwError(ternInvalidArgument, "calibration: nothing to fit (no measurement exercises a link; sizes below "
                                    "--min-size are left out)");
  }

  // Rounds: simulate with the current values, read off the terms, solve, repeat until the values settle.
  for (int round = 0; round < o.maxRounds && !unknowns.empty(); ++round) {
    result.rounds = round + 1;
    CostParams params = start;
    applyUnknowns(unknowns, o, codecBase, params);
    std::vector<std::vector<double>> rows;
    std::vector<double> y, w;
    for (const PerfRun& run : runs) {
      const std::unique_ptr<Planner> pl = plannerFor(run, params, o);
      for (const PerfPoint& p : run.points) {
        if (p.bytes < o.minBytes || kindOf(run, p) == PointKind::kDirect) continue;
        const Estimate e = predictPoint(*pl, run, p);
        if (!e.error.empty()) continue;
        std::vector<double> row(unknowns.size(), 0);
        double fixedPart = e.critical.total();
        for (size_t j = 0; j < unknowns.size(); ++j) {
          const Unknown& u = unknowns[j];
          const int c = static_cast<int>(u.cls);
          double term = 0;
          if (u.kind == Unknown::kAlpha) term = e.critical.latency[c];
          if (u.kind == Unknown::kBeta) term = e.critical.transfer[c];
          if (u.kind == Unknown::kCodec) term = kindOf(run, p) == PointKind::kCompressed && run.compress == u.key
                                                    ? e.critical.codec
                                                    : 0;
          row[j] = u.value > 0 ? term / u.value : 0;
          fixedPart -= term;
        }
        rows.push_back(row);
        y.push_back(p.seconds - fixedPart);
        w.push_back(1.0 / p.seconds);
      }
    }
    std::vector<double> prev;
    std::vector<bool> freeCol;
    for (const Unknown& u : unknowns) {
      prev.push_back(u.value);
      freeCol.push_back(!u.fixed);
    }
    std::vector<double> next = solve(rows, y, w, freeCol, prev);
    // Infeasible values: a negative latency pins that latency at (almost) zero, a non-positive bandwidth term or
    // codec multiplier keeps its previous value; then the others are solved again.
    for (size_t pass = 0; pass < unknowns.size(); ++pass) {
      bool changed = false;
      for (size_t j = 0; j < unknowns.size(); ++j) {
        if (!freeCol[j]) continue;
        if (unknowns[j].kind == Unknown::kAlpha && next[j] < kMinAlpha) {
          prev[j] = kMinAlpha;
          freeCol[j] = false;
          changed = true;
        } else if (unknowns[j].kind != Unknown::kAlpha && next[j] <= 0) {
          freeCol[j] = false;
          changed = true;
        }
      }
      if (!changed) break;
      next = solve(rows, y, w, freeCol, prev);
    }
    double change = 0;
    for (size_t j = 0; j < unknowns.size(); ++j) {
      if (!freeCol[j]) next[j] = prev[j];
      change = std::max(change, std::fabs(next[j] - unknowns[j].value) / std::max(unknowns[j].value, 1e-300));
      unknowns[j].value = next[j];
    }
    if (change < 1e-6) break;
  }
  applyUnknowns(unknowns, o, codecBase, result.params);
  for (const Unknown& u : unknowns) {
    if (u.kind == Unknown::kAlpha) result.fitted.push_back(u.key + " alpha/beta");
    if (u.kind == Unknown::kCodec) result.fitted.push_back("codec " + u.key);
  }

  // The direct path: a straight line in bytes x busFactor, weighted like the rest.
  if (!direct.empty()) {
    double s00 = 0, s01 = 0, s11 = 0, t0 = 0, t1 = 0;
    for (const auto& [x, t] : direct) {
      const double ww = 1.0 / (t * t);
      s00 += ww;
      s01 += ww * x;
      s11 += ww * x * x;
      t0 += ww * t;
      t1 += ww * x * t;
    }
    const double det = s00 * s11 - s01 * s01;
    DirectCost d;
    if (direct.size() >= 2 && std::fabs(det) > 0) {
      d.alpha = (t0 * s11 - s01 * t1) / det;
      d.beta = (s00 * t1 - s01 * t0) / det;
    }
    if (d.alpha < 0 || direct.size() < 2 || !(d.beta > 0)) {  // through the origin
      d.alpha = 0;
      d.beta = t1 / s11;
    }
    result.params.shmDirect = d;
    result.fitted.push_back("shm_direct");
  }

  result.points = predictRuns(runs, result.params, o);
  double sum = 0;
  int count = 0;
  for (const FitPoint& p : result.points) {
    if (p.predicted < 0) continue;
    const double err = (p.predicted - p.measured) / p.measured;
    sum += err * err;
    result.maxError = std::max(result.maxError, std::fabs(err));
    ++count;
  }
  result.rmsError = count > 0 ? std::sqrt(sum / count) : 0;
  return result;
}

}  // namespace tern::planner
