#include "size_report.hpp"

#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "algorithms/registry.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "core/device_engine_choice.hpp"
#include "explain.hpp"
#include "planner/units.hpp"
#include "text_table.hpp"

namespace tern::calc {

using namespace tern::planner;

namespace {

struct Row {
  Estimate e;
  std::string label;  // the name shown (compressed rows carry their codec)
};

// Where the job's ranks drive GPUs, the planner of their host-memory calls, as the library's (every rank a CPU,
// same-host peers over shared memory): what staging a device call would run. Null for a job of CPU ranks.
std::unique_ptr<const Planner> hostPlannerOf(const Setup& s) {
  if (!topo::placesGpus(*s.job)) return nullptr;
  PlannerConfig hostConfig = s.config();
  hostConfig.job = std::make_shared<const topo::JobTopology>(topo::withCpuRanks(*s.job));
  hostConfig.intra = IntraTransport::kShm;
  return std::make_unique<const Planner>(hostConfig);
}

// What a stream-ordered call on the GPU ranks' device buffers would run (core/device_engine_choice.hpp): NCCL on the
// GPUs' links against staging through host memory. Empty for a job of CPU ranks (no host planner) and for
// collectives NCCL does not run.
std::vector<DeviceEngineEstimate> deviceEngines(const Setup& s, const Planner& device, const Planner* host,
                                                Collective c, double bytes, ternDataType_t dtype) {
  if (host == nullptr || c == Collective::kBarrier) return {};
  const std::vector<Estimate> hostRanked = host->rank(c, bytes, dtype);
  if (hostRanked.empty() || !hostRanked.front().error.empty()) return {};
  const int p = device.nranks();
  return rankDeviceEngines(argsForBytes(c, bytes, p, dtype), p, *s.job, &device, hostRanked.front().algorithm,
                           hostRanked.front().seconds);
}

std::string describeEngines(const std::vector<DeviceEngineEstimate>& engines) {
  std::string text;
  for (const DeviceEngineEstimate& e : engines) {
    if (e.seconds < 0) continue;
    text += format("%s%s (%s) %s", text.empty() ? "" : ", ", e.engine.c_str(), e.algorithm.c_str(),
                   formatTime(e.seconds).c_str());
  }
  return text.empty() ? text : text + " -> " + engines.front().engine;
}

std::vector<double> sizesOf(const Options& o) {
  std::vector<double> sizes;
  for (const std::string& s : o.sizes) sizes.push_back(parseBytes(s));
  if (!o.sweep.empty()) {
    const Sweep w = parseSweep(o.sweep);
    for (double x = w.first; x <= w.last * (1 + 1e-9); x *= w.factor) sizes.push_back(std::round(x));
  }
  for (double x : sizes) {
    if (x < 1) throwError(ternInvalidArgument, "bad size: %g bytes (at least 1 B)", x);
  }
  return sizes;
}

std::vector<Row> priceAll(const Planner& planner, Collective c, double bytes, ternDataType_t dtype,
                          const std::vector<std::string>& names, const std::string& codec) {
  std::vector<Row> rows;
  rows.reserve(names.size());
  for (const std::string& n : names) rows.push_back({planner.estimate(c, bytes, n, dtype), n});
  if (!codec.empty()) {
    for (Estimate& e : planner.rankCompressed(c, bytes, codec)) {
      std::string label = e.algorithm + " (" + codec + ")";
      rows.push_back({std::move(e), std::move(label)});
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return cheaperEstimate(a.e, b.e); });
  return rows;
}

// What the library would run: with --compress the compressed algorithm (TERN_COMPRESS compresses every float call
// from kCompressMinBytes up, whatever the model says); the shm direct path where it applies and the shm schedules
// are not calibrated (Planner::shmSchedulesCalibrated); else the cheapest uncompressed row.
std::string bestOf(const std::vector<Row>& rows, double bytes, bool compress, bool preferDirect) {
  if (!compress) {
    for (const Row& r : rows) {
      if (preferDirect && r.label == "shm_direct" && r.e.error.empty() && r.e.seconds >= 0) return r.label;
    }
  }
  for (const Row& r : rows) {
    const bool compressed = r.label != r.e.algorithm;
    if (r.e.error.empty() && compressed == (compress && bytes >= kCompressMinBytes)) return r.label;
  }
  return "";
}

std::string bestOf(const Planner& planner, Collective c, double bytes, ternDataType_t dtype,
                   const std::vector<std::string>& names, const std::string& codec) {
  return bestOf(priceAll(planner, c, bytes, dtype, names, codec), bytes, !codec.empty(),
                !planner.shmSchedulesCalibrated());
}

struct Crossover {
  std::string from, to;
  double bytes;
};

// Where the cheapest algorithm changes between consecutive sizes: bisection on a log scale.
std::vector<Crossover> crossovers(const Planner& planner, Collective c, ternDataType_t dtype,
                                  const std::vector<std::string>& names, const std::string& codec,
                                  const std::vector<double>& sizes, const std::vector<std::string>& best) {
  std::vector<Crossover> out;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    if (best[i] == best[i + 1] || best[i].empty() || best[i + 1].empty()) continue;
    double lo = sizes[i], hi = sizes[i + 1];
    const std::string& loName = best[i];
    for (int k = 0; k < 10 && hi / lo > 1.02; ++k) {
      const double mid = std::round(std::sqrt(lo * hi));
      if (mid <= lo || mid >= hi) break;
      const std::string m = bestOf(planner, c, mid, dtype, names, codec);
      if (m == loName) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    out.push_back({best[i], best[i + 1], hi});
  }
  return out;
}

double busbw(Collective c, int p, double bytes, double seconds) {
  return seconds > 0 ? bytes / seconds / 1e9 * busFactor(c, p) : 0;
}

}  // namespace

int runSizeReport(const Options& o, const Setup& s) {
  const Collective c = parseCollective(o.collective);
  const ternDataType_t dtype = parseDtype(o.dtype);
  const std::vector<double> sizes = sizesOf(o);
  if (sizes.empty()) throwError(ternInvalidArgument, "nothing to price: give --size, --sweep or --model-params");
  Planner planner(s.config());
  std::vector<std::string> names;
  if (!o.algo.empty()) {
    const AlgorithmInfo* entry = findEntry(c, o.algo);
    if (entry != nullptr && entry->family == AlgorithmFamily::kCompressed) {
      throwError(ternInvalidArgument, "'%s' is a compressed algorithm: price it with --compress CODEC", o.algo.c_str());
    }
    if (entry == nullptr && o.algo != "shm_direct") {
      throwError(ternInvalidArgument, "unknown %s algorithm '%s' (see --list)", collectiveName(c), o.algo.c_str());
    }
    names.push_back(o.algo);
  } else {
    names = planner.candidates(c);
  }
  const int p = planner.nranks();
  const std::unique_ptr<const Planner> hostPlanner = hostPlannerOf(s);
  std::vector<std::vector<Row>> table;
  std::vector<std::string> best;
  for (double bytes : sizes) {
    table.push_back(priceAll(planner, c, bytes, dtype, names, o.compress));
    best.push_back(bestOf(table.back(), bytes, !o.compress.empty(), !planner.shmSchedulesCalibrated()));
  }
  const std::vector<Crossover> xs =
      sizes.size() > 1 ? crossovers(planner, c, dtype, names, o.compress, sizes, best) : std::vector<Crossover>{};

  if (o.json) {
    nlohmann::ordered_json doc;
    doc["topology"] = {{"name", s.title},
                       {"description", s.description},
                       {"ranks", p},
                       {"hosts", planner.numHosts()},
                       {"intra", intraTransportName(s.intra)},
                       {"links", linksSummary(planner)},
                       {"parameters", s.paramsSource}};
    doc["collective"] = collectiveName(c);
    doc["dtype"] = dataTypeName(dtype);
    doc["bus_factor"] = busFactor(c, p);
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (size_t i = 0; i < sizes.size(); ++i) {
      nlohmann::ordered_json algos = nlohmann::ordered_json::array();
      for (const Row& r : table[i]) {
        nlohmann::ordered_json a = {{"name", r.label}};
        if (!r.e.error.empty()) {
          a["error"] = r.e.error;
        } else {
          a["time_us"] = r.e.seconds * 1e6;
          a["algbw_gbs"] = sizes[i] / r.e.seconds / 1e9;
          a["busbw_gbs"] = busbw(c, p, sizes[i], r.e.seconds);
          a["limited_by"] = limitedBy(r.e.critical);
          a["busiest_port"] = r.e.busiestPort;
          a["busiest_utilization"] = r.e.busiestUtilization;
          a["simulated"] = r.e.simulated;
          nlohmann::ordered_json cp;
          for (int k = 0; k < kNumModelLinks; ++k) {
            const std::string n = modelLinkName(static_cast<ModelLink>(k));
            if (r.e.critical.latency[k] > 0) cp[n + "_latency_us"] = r.e.critical.latency[k] * 1e6;
            if (r.e.critical.transfer[k] > 0) cp[n + "_transfer_us"] = r.e.critical.transfer[k] * 1e6;
          }
          if (r.e.critical.reduce > 0) cp["reduce_us"] = r.e.critical.reduce * 1e6;
          if (r.e.critical.copy > 0) cp["copy_us"] = r.e.critical.copy * 1e6;
          if (r.e.critical.codec > 0) cp["codec_us"] = r.e.critical.codec * 1e6;
          a["critical_path"] = cp;
        }
        algos.push_back(a);
      }
      nlohmann::ordered_json entry = {
          {"bytes", sizes[i]}, {"size", formatBytes(sizes[i])}, {"best", best[i]}, {"algorithms", algos}};
      const std::vector<DeviceEngineEstimate> engines =
          deviceEngines(s, planner, hostPlanner.get(), c, sizes[i], dtype);
      if (!engines.empty()) {
        nlohmann::ordered_json ej = nlohmann::ordered_json::array();
        for (const DeviceEngineEstimate& e : engines) {
          nlohmann::ordered_json one = {{"engine", e.engine}, {"algorithm", e.algorithm}};
          if (e.seconds >= 0) one["time_us"] = e.seconds * 1e6;
          ej.push_back(one);
        }
        entry["device_engines"] = ej;
      }
      out.push_back(entry);
    }
    doc["sizes"] = out;
    nlohmann::ordered_json cj = nlohmann::ordered_json::array();
    for (const Crossover& x : xs) cj.push_back({{"from", x.from}, {"to", x.to}, {"bytes", x.bytes}});
    doc["crossovers"] = cj;
    std::printf("%s\n", doc.dump(2).c_str());
    return 0;
  }

  std::printf("# tern-calc: %s: %s\n", s.title.c_str(), s.description.c_str());
  std::printf("# %d ranks on %d host%s, parameters: %s\n", p, planner.numHosts(), planner.numHosts() == 1 ? "" : "s",
              s.paramsSource.c_str());
  std::printf("# links: %s\n", linksSummary(planner).c_str());
  std::printf("# busbw = algbw x %s (%s on %d ranks)\n", formatNumber(busFactor(c, p)).c_str(), collectiveName(c), p);
  if (sizes.size() <= 3) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::printf("\n%s of %s (%s):\n", collectiveName(c), formatBytes(sizes[i]).c_str(), dataTypeName(dtype));
      TextTable t({"algorithm", "time", "algbw", "busbw", "limited by", "busiest port"});
      for (const Row& r : table[i]) {
        if (!r.e.error.empty()) {
          t.add({r.label, "n/a", "", "", r.e.error});
          continue;
        }
        t.add({r.label, formatTime(r.e.seconds), formatRate(sizes[i] / r.e.seconds),
               formatRate(busbw(c, p, sizes[i], r.e.seconds) * 1e9), limitedBy(r.e.critical), busiest(r.e)});
      }
      std::printf("%s", t.str().c_str());
      if (!best[i].empty()) std::printf("  selected: %s\n", best[i].c_str());
      if (const std::string engines = describeEngines(deviceEngines(s, planner, hostPlanner.get(), c, sizes[i], dtype));
          !engines.empty()) {
        std::printf("  on device buffers (stream-ordered): %s\n", engines.c_str());
      }
      // The textbook formulas with uniform links, to explain the simulated numbers.
      bool header = false;
      for (const Row& r : table[i]) {
        const FormulaInputs in = planner.formulaInputs(c, r.e.algorithm, sizes[i]);
        const std::optional<Formula> f = closedForm(c, r.e.algorithm, in);
        if (!f || !r.e.error.empty()) continue;
        if (!header) {
          std::printf("  closed forms (n = %s, p = %d, uniform links; a = latency, b = 1/bandwidth, g = reduce):\n",
                      formatBytes(sizes[i]).c_str(), p);
          header = true;
        }
        std::printf("    %-10s %s = %s  [a %s, b 1/(%s)]\n", r.e.algorithm.c_str(), f->text.c_str(),
                    formatTime(f->seconds).c_str(),
                    formatTime(r.e.algorithm == "hier" ? in.alphaNet : in.alpha).c_str(),
                    formatRate(1.0 / (r.e.algorithm == "hier" ? in.betaNet : in.beta)).c_str());
      }
    }
  } else {
    std::vector<std::string> header = {"size", "best", "time", "algbw", "busbw"};
    for (const Row& r : table.front()) header.push_back(r.label);
    // Columns in a fixed order (the first size's ranking) for the per-algorithm times.
    std::vector<std::string> order(header.begin() + 5, header.end());
    TextTable t(header);
    for (size_t i = 0; i < sizes.size(); ++i) {
      const Row* sel = &table[i].front();
      for (const Row& r : table[i]) {
        if (r.label == best[i]) sel = &r;
      }
      const Row& b = *sel;
      std::vector<std::string> row = {formatBytes(sizes[i]), best[i], formatTime(b.e.seconds),
                                      formatRate(sizes[i] / b.e.seconds),
                                      formatRate(busbw(c, p, sizes[i], b.e.seconds) * 1e9)};
      for (const std::string& name : order) {
        std::string cell = "n/a";
        for (const Row& r : table[i]) {
          if (r.label == name && r.e.error.empty()) cell = formatTime(r.e.seconds);
        }
        row.push_back(cell);
      }
      t.add(row);
    }
    std::printf("\n%s (%s), time per algorithm:\n%s", collectiveName(c), dataTypeName(dtype), t.str().c_str());
  }
  if (!xs.empty()) {
    std::printf("\ncrossovers (where the cheapest algorithm changes):\n");
    for (const Crossover& x : xs) {
      std::printf("  %s -> %s at about %s\n", x.from.c_str(), x.to.c_str(), formatBytes(x.bytes).c_str());
    }
  }
  return 0;
}

}  // namespace tern::calc
