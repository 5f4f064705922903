#include "planner/calibration.hpp"

#include <cmath>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/env.hpp"
#include "base/error.hpp"

namespace tern::planner {

namespace {

using nlohmann::json;

double positive(const json& obj, const char* key, const std::string& where) {
  const json& v = obj.at(key);
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>())) {
    throwError(ternInvalidArgument, "%s.%s: must be a positive number", where.c_str(), key);
  }
  return v.get<double>();
}

double nonNegative(const json& obj, const char* key, const std::string& where) {
  const json& v = obj.at(key);
  if (!v.is_number() || v.get<double>() < 0 || !std::isfinite(v.get<double>())) {
    throwError(ternInvalidArgument, "%s.%s: must be a number >= 0", where.c_str(), key);
  }
  return v.get<double>();
}

void onlyKeys(const json& obj, std::initializer_list<const char*> keys, const std::string& where) {
  if (!obj.is_object()) throwError(ternInvalidArgument, "%s: must be an object", where.c_str());
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool known = false;
    for (const char* k : keys) known |= it.key() == k;
    if (!known) throwError(ternInvalidArgument, "%s: unknown key \"%s\"", where.c_str(), it.key().c_str());
  }
}

// A "cache" array: [{"bytes": N, "<figure>": X}, ...] in ascending size. toBeta turns the figure into the level's
// beta (1 / bandwidth, or 1 / speedup for codecs).
CacheLevels parseCache(const json& v, const char* figure, double (*toBeta)(double), const std::string& where) {
  if (!v.is_array())
    throwError(ternInvalidArgument, "%s: must be an array of {\"bytes\", \"%s\"}", where.c_str(), figure);
  CacheLevels out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string w = where + "[" + std::to_string(i) + "]";
    onlyKeys(v[i], {"bytes", figure}, w);
    CacheLevel l{positive(v[i], "bytes", w), toBeta(positive(v[i], figure, w))};
    if (!out.empty() && l.bytes <= out.back().bytes) {
      throwError(ternInvalidArgument, "%s: levels must come in ascending size", w.c_str());
    }
    out.push_back(l);
  }
  return out;
}

double perGBs(double gbs) { return 1.0 / (gbs * 1e9); }
double inverse(double x) { return 1.0 / x; }

nlohmann::ordered_json cacheToJson(const CacheLevels& levels, const char* figure, double (*fromBeta)(double));

void applyLink(const std::string& name, const json& v, CostParams& params, const std::string& where) {
  const std::string base = name.substr(0, name.find(':'));
  const std::optional<ModelLink> cls = parseModelLink(base);
  if (!cls || (name.find(':') != std::string::npos &&
               (*cls != ModelLink::kNetwork || !topo::parseNetKind(name.substr(name.find(':') + 1))))) {
    throwError(ternInvalidArgument,
               "%s: unknown link class \"%s\" (shm, loopback, nvlink, pcie, smp, network, network:<ib|roce|ethernet>)",
               where.c_str(), name.c_str());
  }
  const std::string w = where + "." + name;
  onlyKeys(v, {"alpha_us", "bandwidth_gbs", "speed_gbps", "cache"}, w);
  // Canonical key: the class's own name, or "network:<kind>" with the kind's canonical name.
  std::string key = modelLinkName(*cls);
  if (name.find(':') != std::string::npos)
    key += std::string(":") + topo::netKindName(*topo::parseNetKind(name.substr(name.find(':') + 1)));
  LinkCalibration& c = params.links[key];
  if (v.contains("alpha_us")) c.cost.alpha = nonNegative(v, "alpha_us", w) * 1e-6;
  if (v.contains("bandwidth_gbs")) c.cost.beta = 1.0 / (positive(v, "bandwidth_gbs", w) * 1e9);
  if (c.cost.beta <= 0) throwError(ternInvalidArgument, "%s: bandwidth_gbs is required", w.c_str());
  if (v.contains("cache")) {
    if (*cls == ModelLink::kNetwork)
      throwError(ternInvalidArgument, "%s: cache levels are for same-host classes", w.c_str());
    c.cache = parseCache(v["cache"], "bandwidth_gbs", perGBs, w + ".cache");
  }
  if (v.contains("speed_gbps")) {
    if (*cls != ModelLink::kNetwork) throwError(ternInvalidArgument, "%s: speed_gbps is for the network", w.c_str());
    c.speedGbps = positive(v, "speed_gbps", w);
  }
}

void applyCompute(const json& v, ComputeCost& c, const std::string& where) {
  onlyKeys(v, {"reduce_gbs", "copy_gbs"}, where);
  if (v.contains("reduce_gbs")) c.reduceBeta = 1.0 / (positive(v, "reduce_gbs", where) * 1e9);
  if (v.contains("copy_gbs")) c.copyBeta = 1.0 / (positive(v, "copy_gbs", where) * 1e9);
}

double gbs(double beta) { return beta > 0 ? 1.0 / beta / 1e9 : 0; }

// Rounds to 6 significant digits so that written files stay readable.
double tidy(double x) {
  if (x == 0 || !std::isfinite(x)) return x;
  const double scale = std::pow(10.0, 5 - static_cast<int>(std::floor(std::log10(std::fabs(x)))));
  return std::round(x * scale) / scale;
}

nlohmann::ordered_json cacheToJson(const CacheLevels& levels, const char* figure, double (*fromBeta)(double)) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const CacheLevel& l : levels) {
    a.push_back({{"bytes", static_cast<uint64_t>(std::llround(l.bytes))}, {figure, tidy(fromBeta(l.beta))}});
  }
  return a;
}

}  // namespace

void applyCalibration(const json& doc, CostParams& params, const std::string& source) {
  try {
    onlyKeys(doc,
             {"version", "links", "compute", "codecs", "shm_direct", "shm_algorithms", "fit", "comment", "generated_by",
              "sources"},
             source);
    if (!doc.contains("version") || !doc["version"].is_number_integer()) {
      throwError(ternInvalidArgument, "%s: \"version\" (an integer) is required", source.c_str());
    }
    if (doc["version"].get<int>() > kCalibrationVersion || doc["version"].get<int>() < 1) {
      throwError(ternInvalidArgument, "%s: version %d is not supported (this build reads version %d)", source.c_str(),
                 doc["version"].get<int>(), kCalibrationVersion);
    }
    if (doc.contains("links")) {
      if (!doc["links"].is_object()) throwError(ternInvalidArgument, "%s.links: must be an object", source.c_str());
      for (auto it = doc["links"].begin(); it != doc["links"].end(); ++it) {
        applyLink(it.key(), it.value(), params, source + ".links");
      }
    }
    if (doc.contains("compute")) {
      onlyKeys(doc["compute"], {"cpu", "gpu"}, source + ".compute");
      if (doc["compute"].contains("cpu")) applyCompute(doc["compute"]["cpu"], params.cpu, source + ".compute.cpu");
      if (doc["compute"].contains("gpu")) applyCompute(doc["compute"]["gpu"], params.gpu, source + ".compute.gpu");
    }
    if (doc.contains("codecs")) {
      if (!doc["codecs"].is_object()) throwError(ternInvalidArgument, "%s.codecs: must be an object", source.c_str());
      for (auto it = doc["codecs"].begin(); it != doc["codecs"].end(); ++it) {
        const std::string w = source + ".codecs." + it.key();
        onlyKeys(it.value(), {"encode_gbs", "decode_gbs", "cache"}, w);
        CodecSpeed s = params.codecs.count(it.key()) ? params.codecs[it.key()] : CodecSpeed{};
        if (it.value().contains("encode_gbs")) s.encodeBeta = 1.0 / (positive(it.value(), "encode_gbs", w) * 1e9);
        if (it.value().contains("decode_gbs")) s.decodeBeta = 1.0 / (positive(it.value(), "decode_gbs", w) * 1e9);
        if (it.value().contains("cache")) s.cache = parseCache(it.value()["cache"], "speedup", inverse, w + ".cache");
        if (s.encodeBeta <= 0 || s.decodeBeta <= 0) {
          throwError(ternInvalidArgument, "%s: encode_gbs and decode_gbs are required", w.c_str());
        }
        params.codecs[it.key()] = s;
      }
    }
    if (doc.contains("shm_direct")) {
      const std::string w = source + ".shm_direct";
      onlyKeys(doc["shm_direct"], {"alpha_us", "busbw_gbs", "cache"}, w);
      DirectCost d;
      d.alpha = doc["shm_direct"].contains("alpha_us") ? nonNegative(doc["shm_direct"], "alpha_us", w) * 1e-6 : 0;
      d.beta = 1.0 / (positive(doc["shm_direct"], "busbw_gbs", w) * 1e9);
      if (doc["shm_direct"].contains("cache"))
        d.cache = parseCache(doc["shm_direct"]["cache"], "busbw_gbs", perGBs, w + ".cache");
      params.shmDirect = d;
    }
    if (doc.contains("shm_algorithms")) {
      const std::string w = source + ".shm_algorithms";
      const json& a = doc["shm_algorithms"];
      onlyKeys(a, {"small_alpha_us", "small_gbs", "pipelined_alpha_us", "pipelined_busbw_gbs"}, w);
      ShmAlgorithmCost& c = params.shmAlgorithms;
      if (a.contains("small_alpha_us")) c.smallAlpha = nonNegative(a, "small_alpha_us", w) * 1e-6;
      if (a.contains("small_gbs")) c.smallBytesPerSecond = positive(a, "small_gbs", w) * 1e9;
      if (a.contains("pipelined_alpha_us")) c.pipelinedAlpha = nonNegative(a, "pipelined_alpha_us", w) * 1e-6;
      if (a.contains("pipelined_busbw_gbs")) c.pipelinedBusBytesPerSecond = positive(a, "pipelined_busbw_gbs", w) * 1e9;
    }
  } catch (const json::exception& e) {
    throwError(ternInvalidArgument, "%s: %s", source.c_str(), e.what());
  }
}

void applyCalibrationFile(const std::string& path, CostParams& params) {
  std::ifstream f(path);
  if (!f) throwError(ternInvalidArgument, "%s: cannot read the calibration file", path.c_str());
  std::stringstream ss;
  ss << f.rdbuf();
  json doc;
  try {
    doc = json::parse(ss.str());
  } catch (const json::exception& e) {
    throwError(ternInvalidArgument, "%s: not valid JSON (%s)", path.c_str(), e.what());
  }
  applyCalibration(doc, params, path);
}

nlohmann::ordered_json calibrationToJson(const CostParams& params) {
  nlohmann::ordered_json doc;
  doc["version"] = kCalibrationVersion;
  nlohmann::ordered_json links = nlohmann::ordered_json::object();
  for (const auto& [name, c] : params.links) {
    nlohmann::ordered_json l;
    l["alpha_us"] = c.cost.alpha < 1e-9 ? 0.0 : tidy(c.cost.alpha * 1e6);  // the fit's clamped zero
    l["bandwidth_gbs"] = tidy(gbs(c.cost.beta));
    if (c.speedGbps > 0) l["speed_gbps"] = tidy(c.speedGbps);
    if (!c.cache.empty()) l["cache"] = cacheToJson(c.cache, "bandwidth_gbs", gbs);
    links[name] = l;
  }
  doc["links"] = links;
  doc["compute"]["cpu"] = {{"reduce_gbs", tidy(gbs(params.cpu.reduceBeta))},
                           {"copy_gbs", tidy(gbs(params.cpu.copyBeta))}};
  doc["compute"]["gpu"] = {{"reduce_gbs", tidy(gbs(params.gpu.reduceBeta))},
                           {"copy_gbs", tidy(gbs(params.gpu.copyBeta))}};
  if (!params.codecs.empty()) {
    for (const auto& [name, s] : params.codecs) {
      doc["codecs"][name] = {{"encode_gbs", tidy(gbs(s.encodeBeta))}, {"decode_gbs", tidy(gbs(s.decodeBeta))}};
      if (!s.cache.empty()) doc["codecs"][name]["cache"] = cacheToJson(s.cache, "speedup", inverse);
    }
  }
  if (params.shmDirect) {
    doc["shm_direct"] = {{"alpha_us", tidy(params.shmDirect->alpha * 1e6)},
                         {"busbw_gbs", tidy(gbs(params.shmDirect->beta))}};
    if (!params.shmDirect->cache.empty())
      doc["shm_direct"]["cache"] = cacheToJson(params.shmDirect->cache, "busbw_gbs", gbs);
  }
  if (!(params.shmAlgorithms == ShmAlgorithmCost{})) {  // the defaults stay implicit
    const ShmAlgorithmCost& c = params.shmAlgorithms;
    doc["shm_algorithms"] = {{"small_alpha_us", tidy(c.smallAlpha * 1e6)},
                             {"small_gbs", tidy(c.smallBytesPerSecond / 1e9)},
                             {"pipelined_alpha_us", tidy(c.pipelinedAlpha * 1e6)},
                             {"pipelined_busbw_gbs", tidy(c.pipelinedBusBytesPerSecond / 1e9)}};
  }
  return doc;
}

const CostParams& processCostParams() {
  static std::once_flag once;
  static CostParams params;
  static std::string error;
  std::call_once(once, [] {
    params = defaultCostParams();
    std::optional<std::string> path = envString("TUNE_FILE");
    if (!path || path->empty()) return;
    try {
      applyCalibrationFile(*path, params);
    } catch (const Error& e) {
      error = std::string(kTuneFileEnv) + ": " + e.what();
      params = defaultCostParams();
    }
  });
  if (!error.empty()) throwError(ternInvalidArgument, "%s", error.c_str());
  return params;
}

}  // namespace tern::planner
