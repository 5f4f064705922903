#include "planner/fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "algorithms/registry.hpp"
#include "base/error.hpp"
#include "planner/cluster_spec.hpp"

namespace tern::planner {

namespace {

// Latencies never go exactly to zero: the fit reads each term's count as term / alpha.
// Weights: 1 / predicted time of the previous round (iteratively reweighted least squares), so that the fit
// minimizes sum ((measured - predicted) / predicted)^2, the squared relative error of the predicted *bus
// bandwidth* (busbw is bytes / time). Weighting by 1 / measured instead lets one unusually fast measurement drag
// the whole fit towards it.
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
  enum Kind { kAlpha, kBeta, kCacheBeta, kCodec, kCodecCache } kind;
  ModelLink cls = ModelLink::kShm;
  std::string key;  // link key or codec spec
  double value = 0;
  size_t level = 0;  // kCacheBeta, kCodecCache: which cache level
};

// Cache level sizes (ascending) per cache group: a same-host link key, "shm_direct", or "codec:<spec>".
using CacheSizes = std::map<std::string, std::vector<double>>;

std::vector<double> cacheOf(const CacheSizes& caches, const std::string& group) {
  auto it = caches.find(group);
  return it == caches.end() ? std::vector<double>{} : it->second;
}

// Writes the unknowns' values into params.
void applyUnknowns(const std::vector<Unknown>& u, const FitOptions& o, const std::map<std::string, CodecSpeed>& base,
                   const CacheSizes& caches, CostParams& params) {
  for (const Unknown& x : u) {
    if (x.kind == Unknown::kCodec || x.kind == Unknown::kCodecCache) {
      const CodecSpeed& b = base.at(x.key);
      CodecSpeed& c = params.codecs[x.key];
      const std::vector<double> sizes = cacheOf(caches, "codec:" + x.key);
      c.cache.resize(sizes.size());
      if (x.kind == Unknown::kCodec) {
        c.encodeBeta = b.encodeBeta * x.value;
        c.decodeBeta = b.decodeBeta * x.value;
      }
      // Level multipliers are relative to the base speed; the entry's own beta carries the out-of-cache one.
      if (x.kind == Unknown::kCodecCache) c.cache[x.level] = {sizes[x.level], x.value};
      continue;
    }
    LinkCalibration& l = params.links[x.key];
    if (x.kind == Unknown::kAlpha) l.cost.alpha = x.value;
    if (x.kind == Unknown::kBeta) l.cost.beta = x.value;
    if (x.kind == Unknown::kCacheBeta) {
      const std::vector<double> sizes = cacheOf(caches, x.key);
      l.cache.resize(sizes.size());
      l.cache[x.level] = {sizes[x.level], x.value};
    }
    if (x.cls == ModelLink::kNetwork && o.netGbps > 0) l.speedGbps = o.netGbps;
  }
  // Codec levels were stored as absolute multipliers of the base speed: make them relative to the entry's own.
  for (auto& [spec, c] : params.codecs) {
    if (!base.count(spec) || c.cache.empty()) continue;
    const double out = c.encodeBeta / base.at(spec).encodeBeta;
    for (CacheLevel& l : c.cache) l.beta /= out;
  }
}

// Weighted least squares with scaled columns and a whisper of ridge (unidentifiable columns keep their value).
// rows[i] = coefficients, y[i] = target, w[i] = weight. Returns the solution for the free columns.
std::vector<double> solve(const std::vector<std::vector<double>>& rows, const std::vector<double>& y,
                          const std::vector<double>& w, const std::vector<bool>& freeCol,
                          const std::vector<double>& prev) {
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

namespace {

// Sum of squared relative busbw errors: what the fit minimizes and what chooses the cache size.
double score(const std::vector<FitPoint>& points) {
  double sum = 0;
  for (const FitPoint& p : points) {
    if (p.predicted <= 0) return 1e300;
    sum += std::pow((p.measured - p.predicted) / p.predicted, 2);
  }
  return sum;
}

// Infeasible values: a negative latency pins that latency at (almost) zero, a non-positive bandwidth term or codec
// multiplier keeps its previous value; then the others are solved again.
std::vector<double> solveClamped(const std::vector<std::vector<double>>& rows, const std::vector<double>& y,
                                 const std::vector<double>& w, std::vector<double> prev,
                                 const std::vector<bool>& isLatency) {
  std::vector<bool> freeCol(prev.size(), true);
  std::vector<double> next = solve(rows, y, w, freeCol, prev);
  for (size_t pass = 0; pass < prev.size(); ++pass) {
    bool changed = false;
    for (size_t j = 0; j < prev.size(); ++j) {
      if (!freeCol[j]) continue;
      if (isLatency[j] && next[j] < kMinAlpha) {
        prev[j] = kMinAlpha;
        freeCol[j] = false;
        changed = true;
      } else if (!isLatency[j] && !(next[j] > 0)) {
        freeCol[j] = false;
        changed = true;
      }
    }
    if (!changed) break;
    next = solve(rows, y, w, freeCol, prev);
  }
  for (size_t j = 0; j < prev.size(); ++j) {
    if (!freeCol[j]) next[j] = prev[j];
  }
  return next;
}

// The direct path: time = alpha + x (w_mem beta + sum_l w_l beta_l), x = bytes x busFactor, w the cache weights.
struct DirectPoint {
  double x, seconds;
  std::vector<double> weights;  // per cache level, then out of cache
};

DirectCost fitDirect(const std::vector<DirectPoint>& pts, const DirectCost& startValue,
                     const std::vector<double>& sizes, int maxRounds) {
  DirectCost d;
  d.alpha = startValue.alpha;
  d.beta = startValue.beta;
  if (!(d.beta > 0)) {
    double sx = 0, st = 0;
    for (const DirectPoint& p : pts) {
      sx += p.x;
      st += p.seconds;
    }
    d.beta = st / sx;
  }
  for (double b : sizes) d.cache.push_back({b, d.beta});
  const size_t k = sizes.size();
  for (int round = 0; round < maxRounds; ++round) {
    std::vector<std::vector<double>> rows;
    std::vector<double> y, w;
    for (const DirectPoint& p : pts) {
      std::vector<double> row = {1.0, p.x * p.weights[k]};
      for (size_t l = 0; l < k; ++l) row.push_back(p.x * p.weights[l]);
      double perByte = p.weights[k] * d.beta;
      for (size_t l = 0; l < k; ++l) perByte += p.weights[l] * d.cache[l].beta;
      rows.push_back(row);
      y.push_back(p.seconds);
      w.push_back(1.0 / (d.alpha + p.x * perByte));
    }
    std::vector<double> prev = {std::max(d.alpha, kMinAlpha), d.beta};
    std::vector<bool> latency = {true, false};
    for (size_t l = 0; l < k; ++l) {
      prev.push_back(d.cache[l].beta);
      latency.push_back(false);
    }
    const std::vector<double> next = solveClamped(rows, y, w, prev, latency);
    double change = std::fabs(next[1] - d.beta) / next[1] + std::fabs(next[0] - d.alpha) / std::max(next[0], 1e-9);
    d.alpha = next[0] <= kMinAlpha ? 0.0 : next[0];
    d.beta = next[1];
    for (size_t l = 0; l < k; ++l) {
      change += std::fabs(next[2 + l] - d.cache[l].beta) / next[2 + l];
      d.cache[l].beta = next[2 + l];
    }
    if (change < 1e-9) break;
  }
  return d;
}

// One fit with given cache sizes per cache group.
FitResult fitWithCaches(const std::vector<PerfRun>& runs, const CostParams& startParams, const FitOptions& o,
                        const CacheSizes& caches) {
  FitResult result;
  const CostParams& start = startParams;
  result.params = start;
  std::vector<Unknown> unknowns;
  std::map<std::string, CodecSpeed> codecBase;
  auto has = [&](const std::string& key, Unknown::Kind kind) {
    return std::any_of(unknowns.begin(), unknowns.end(),
                       [&](const Unknown& u) { return u.key == key && u.kind == kind; });
  };

  // Which classes and codecs the runs exercise, with their current (start or default) values.
  std::vector<DirectPoint> direct;
  const std::vector<double> directCache = cacheOf(caches, "shm_direct");
  CacheLevels directLevels;
  for (double b : directCache) directLevels.push_back({b, 0});
  for (const PerfRun& run : runs) {
    const std::unique_ptr<Planner> pl = plannerFor(run, start, o);
    for (const PerfPoint& p : run.points) {
      if (p.bytes < o.minBytes) continue;
      const PointKind kind = kindOf(run, p);
      const double ws = workingSetBytes(run.collective, p.bytes, run.nranks);
      if (kind == PointKind::kDirect) {
        direct.push_back({p.bytes * busFactor(run.collective, run.nranks), p.seconds, cacheWeights(directLevels, ws)});
        continue;
      }
      const Estimate e = predictPoint(*pl, run, p);
      if (!e.error.empty()) continue;
      for (int c = 0; c < kNumModelLinks; ++c) {
        const ModelLink cls = static_cast<ModelLink>(c);
        if (e.critical.transfer[c] <= 0 && e.critical.latency[c] <= 0) continue;
        const std::string key = linkKey(cls, o);
        if (has(key, Unknown::kAlpha)) continue;
        LinkCost cur = pl->links().classCost(cls);
        if (const LinkCalibration* lc = start.find(cls, o.netKind)) cur = lc->cost;
        unknowns.push_back({Unknown::kAlpha, cls, key, std::max(cur.alpha, kMinAlpha)});
        unknowns.push_back({Unknown::kBeta, cls, key, cur.beta});
        if (cls != ModelLink::kNetwork) {
          const std::vector<double> sizes = cacheOf(caches, key);
          for (size_t l = 0; l < sizes.size(); ++l) unknowns.push_back({Unknown::kCacheBeta, cls, key, cur.beta, l});
        }
      }
      if (kind == PointKind::kCompressed && e.critical.codec > 0 && !codecBase.count(run.compress)) {
        CodecSpeed base = codecSpeed(start, run.compress);
        base.cache.clear();
        codecBase[run.compress] = base;
        unknowns.push_back({Unknown::kCodec, ModelLink::kShm, run.compress, 1.0});
        const std::vector<double> sizes = cacheOf(caches, "codec:" + run.compress);
        for (size_t l = 0; l < sizes.size(); ++l) {
          unknowns.push_back({Unknown::kCodecCache, ModelLink::kShm, run.compress, 1.0, l});
        }
      }
    }
  }
  if (unknowns.empty() && direct.empty()) {
    throwError(ternInvalidArgument,
               "calibration: nothing to fit (no measurement exercises a link; sizes below "
               "--min-size are left out)");
  }

  // Rounds: simulate with the current values, read off the terms, solve, repeat until the values settle.
  for (int round = 0; round < o.maxRounds && !unknowns.empty(); ++round) {
    result.rounds = round + 1;
    CostParams params = start;
    applyUnknowns(unknowns, o, codecBase, caches, params);
    std::vector<std::vector<double>> rows;
    std::vector<double> y, w;
    for (const PerfRun& run : runs) {
      const std::unique_ptr<Planner> pl = plannerFor(run, params, o);
      for (const PerfPoint& p : run.points) {
        if (p.bytes < o.minBytes || kindOf(run, p) == PointKind::kDirect) continue;
        const Estimate e = predictPoint(*pl, run, p);
        if (!e.error.empty()) continue;
        const double ws = workingSetBytes(run.collective, p.bytes, run.nranks);
        const bool compressedPoint = kindOf(run, p) == PointKind::kCompressed;
        std::vector<double> row(unknowns.size(), 0);
        double fixedPart = e.critical.total();
        for (size_t j = 0; j < unknowns.size(); ++j) {
          const Unknown& u = unknowns[j];
          const int c = static_cast<int>(u.cls);
          switch (u.kind) {
            case Unknown::kAlpha:
              row[j] = e.critical.latency[c] / u.value;
              fixedPart -= e.critical.latency[c] + e.critical.transfer[c];
              break;
            case Unknown::kBeta:
            case Unknown::kCacheBeta: {
              // Bytes of this class on the critical path: its transfer seconds over the blended beta in use,
              // shared out over the out-of-cache figure and the levels by their weights.
              const LinkCalibration& l = params.links.at(u.key);
              const double used = cachedBeta(l.cost.beta, l.cache, ws);
              const double bytes = used > 0 ? e.critical.transfer[c] / used : 0;
              const std::vector<double> wts = cacheWeights(l.cache, ws);
              row[j] = bytes * (u.kind == Unknown::kCacheBeta ? wts[u.level] : wts.back());
              break;
            }
            case Unknown::kCodec:
            case Unknown::kCodecCache: {
              if (!compressedPoint || run.compress != u.key) break;
              // The codec seconds at the base speed: what the current multipliers were applied to.
              const CodecSpeed& now = params.codecs.at(u.key);
              const CodecSpeed& b = codecBase.at(u.key);
              const double out = now.encodeBeta / b.encodeBeta;
              const double used = out * codecCacheFactor(now, ws);
              const double base = used > 0 ? e.critical.codec / used : 0;
              const std::vector<double> wts = cacheWeights(now.cache, ws);
              row[j] = base * (u.kind == Unknown::kCodecCache ? wts[u.level] : wts.back());
              if (u.kind == Unknown::kCodec) fixedPart -= e.critical.codec;
              break;
            }
          }
        }
        rows.push_back(row);
        y.push_back(p.seconds - fixedPart);
        w.push_back(1.0 / std::max(e.seconds, 1e-12));
      }
    }
    std::vector<double> prev;
    std::vector<bool> latency;
    for (const Unknown& u : unknowns) {
      prev.push_back(u.value);
      latency.push_back(u.kind == Unknown::kAlpha);
    }
    const std::vector<double> next = solveClamped(rows, y, w, prev, latency);
    double change = 0;
    for (size_t j = 0; j < unknowns.size(); ++j) {
      change = std::max(change, std::fabs(next[j] - unknowns[j].value) / std::max(unknowns[j].value, 1e-300));
      unknowns[j].value = next[j];
    }
    if (change < 1e-6) break;
  }
  applyUnknowns(unknowns, o, codecBase, caches, result.params);
  for (const Unknown& u : unknowns) {
    if (u.kind == Unknown::kAlpha) result.fitted.push_back(u.key + " alpha/beta");
    if (u.kind == Unknown::kCodec) result.fitted.push_back("codec " + u.key);
  }
  if (!direct.empty()) {
    result.params.shmDirect =
        fitDirect(direct, start.shmDirect.value_or(DirectCost{}), directCache, std::max(o.maxRounds, 30));
    result.fitted.emplace_back("shm_direct");
  }
  result.points = predictRuns(runs, result.params, o);
  return result;
}

// The cache groups a fit without cache terms found: same-host link keys, the direct path, codecs.
std::vector<std::string> cacheGroups(const FitResult& r) {
  std::vector<std::string> groups;
  const std::string suffix = " alpha/beta";
  for (const std::string& f : r.fitted) {
    if (f.size() > suffix.size() && f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0) {
      const std::string key = f.substr(0, f.size() - suffix.size());
      if (key.rfind("network", 0) != 0) groups.push_back(key);
    } else if (f == "shm_direct") {
      groups.push_back(f);
    } else if (f.rfind("codec ", 0) == 0) {
      groups.push_back("codec:" + f.substr(6));
    }
  }
  return groups;
}

// Cached levels must be what a cache is: faster than the out-of-cache figure, and a larger level no faster than a
// smaller one. A fit that needs a level slower than memory is bending the curve around noise, not finding a cache.
bool levelsArePlausible(double outOfCache, const CacheLevels& levels) {
  double previous = 0;
  for (const CacheLevel& l : levels) {
    if (!(l.beta > 0) || l.beta > outOfCache || l.beta < previous) return false;
    previous = l.beta;
  }
  return true;
}

bool cachesArePlausible(const CostParams& p) {
  for (const auto& [key, l] : p.links) {
    if (!levelsArePlausible(l.cost.beta, l.cache)) return false;
  }
  if (p.shmDirect && !levelsArePlausible(p.shmDirect->beta, p.shmDirect->cache)) return false;
  for (const auto& [spec, c] : p.codecs) {
    if (!levelsArePlausible(1.0, c.cache)) return false;  // codec levels are multipliers of the entry's own speed
  }
  return true;
}

// The runs with the points of one size only (keep = true) or with every size but that one.
std::vector<PerfRun> splitBySize(const std::vector<PerfRun>& runs, double bytes, bool keep) {
  std::vector<PerfRun> out;
  for (const PerfRun& run : runs) {
    PerfRun r = run;
    r.points.clear();
    for (const PerfPoint& p : run.points) {
      if ((p.bytes == bytes) == keep) r.points.push_back(p);
    }
    if (!r.points.empty()) out.push_back(std::move(r));
  }
  return out;
}

// How well a model shape (these cache sizes) predicts sizes it has not seen: every measured size in turn is left out
// of the fit and predicted from the others (leave-one-size-out), scored like the fit itself. In-sample, every added
// level fits better (it is two more free parameters, a size and a speed); held out, a level only pays when the
// data has the step it describes. With fewer than four sizes nothing can be left out usefully and the in-sample
// score is returned.
double heldOutScore(const std::vector<PerfRun>& runs, const CostParams& start, const FitOptions& o,
                    const CacheSizes& caches, const FitResult& inSample) {
  std::vector<double> sizes;
  for (const PerfRun& run : runs) {
    for (const PerfPoint& p : run.points) {
      if (p.bytes >= o.minBytes) sizes.push_back(p.bytes);
    }
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (sizes.size() < 4) return score(inSample.points);
  double sum = 0;
  for (double bytes : sizes) {
    const std::vector<PerfRun> train = splitBySize(runs, bytes, false);
    FitResult r;
    try {
      r = fitWithCaches(train, start, o, caches);
    } catch (const Error&) {
      return 1e300;  // leaving this size out leaves nothing to fit: the shape cannot be judged held out
    }
    sum += score(predictRuns(splitBySize(runs, bytes, true), r.params, o));
  }
  return sum;
}

}  // namespace

FitResult fitCalibration(const std::vector<PerfRun>& runs, const CostParams& start, const FitOptions& o) {
  // Cache sizes are not linear in anything: starting without cache levels, give each group in turn a first level
  // at the best size of a grid (256 KiB .. 256 MiB), then a second, moving every level to its best size after each
  // addition. Where a level goes is chosen by the fit's own score (a change is kept when it fits clearly better: 2%
  // lower score, more than a 0.5% rms busbw error gained, levels plausible); whether the group keeps the level at
  // all is decided held out (heldOutScore must gain a point of rms error), so data without cache effects gets no
  // levels, and a few sizes do not buy a level each.
  CacheSizes caches;
  FitResult best = fitWithCaches(runs, start, o, caches);
  double bestScore = score(best.points);
  const auto clearlyBetter = [](double candidate, double incumbent, size_t points) {
    return candidate < incumbent * 0.98 && incumbent - candidate > 0.005 * 0.005 * static_cast<double>(points);
  };
  // A level must buy at least a point of rms busbw error on the sizes left out: below that it describes the
  // measurements' wobble, not the machine.
  const auto heldOutGain = [](double candidate, double incumbent, size_t points) {
    const double n = static_cast<double>(std::max<size_t>(points, 1));
    return std::sqrt(candidate / n) < std::sqrt(incumbent / n) - 0.01;
  };
  // Accepts `trial` into `kept` (always `caches`) when it fits clearly better; passing `caches` explicitly keeps
  // the write visible at the call sites below, which take a snapshot of it first.
  auto consider = [&](const CacheSizes& trial, CacheSizes& kept) {
    FitResult r = fitWithCaches(runs, start, o, trial);
    const double sc = score(r.points);
    if (cachesArePlausible(r.params) && clearlyBetter(sc, bestScore, r.points.size())) {
      best = std::move(r);
      bestScore = sc;
      kept = trial;
      return true;
    }
    return false;
  };
  std::vector<double> grid;
  for (double c = 256.0 * 1024; c <= 256.0 * 1024 * 1024; c *= 2) grid.push_back(c);
  if (o.fitCache) {
    double bestHeldOut = heldOutScore(runs, start, o, caches, best);
    for (const std::string& g : cacheGroups(best)) {
      for (size_t levels = 1; levels <= 2; ++levels) {
        const CacheSizes before = caches;
        const FitResult beforeFit = best;
        const double beforeScore = bestScore;
        // Add a level where it helps most ...
        for (double c : grid) {
          std::vector<double> sizes = cacheOf(before, g);
          if (std::find(sizes.begin(), sizes.end(), c) != sizes.end()) continue;
          sizes.push_back(c);
          std::sort(sizes.begin(), sizes.end());
          CacheSizes trial = before;
          trial[g] = sizes;
          consider(trial, caches);
        }
        if (cacheOf(caches, g).size() < levels) break;  // no level helped: the group has what it needs
        // ... then move each level to where it fits best with the others in place (coordinate descent) ...
        for (size_t i = 0; i < cacheOf(caches, g).size(); ++i) {
          const CacheSizes base = caches;
          for (double c : grid) {
            std::vector<double> sizes = cacheOf(base, g);
            if (std::find(sizes.begin(), sizes.end(), c) != sizes.end()) continue;
            sizes[i] = c;
            std::sort(sizes.begin(), sizes.end());
            CacheSizes trial = base;
            trial[g] = sizes;
            consider(trial, caches);
          }
        }
        // ... and keep it only if it also predicts the sizes it was not fitted on better.
        const double heldOut = heldOutScore(runs, start, o, caches, best);
        if (!heldOutGain(heldOut, bestHeldOut, best.points.size())) {
          caches = before;
          best = beforeFit;
          bestScore = beforeScore;
          break;
        }
        bestHeldOut = heldOut;
      }
    }
  }
  double sum = 0;
  int count = 0;
  for (const FitPoint& p : best.points) {
    if (p.predicted < 0) continue;
    const double err = (p.predicted - p.measured) / p.measured;
    sum += err * err;
    best.maxError = std::max(best.maxError, std::fabs(err));
    ++count;
  }
  best.rmsError = count > 0 ? std::sqrt(sum / count) : 0;
  for (const auto& [group, sizes] : caches) {
    if (!sizes.empty()) best.fitted.push_back("cache " + group);
  }
  return best;
}

}  // namespace tern::planner
