#include "planner/cost_params.hpp"

#include <algorithm>

#include "compress/codec_cost.hpp"
#include "compress/codec_factory.hpp"

namespace tern::planner {

const LinkCalibration* CostParams::find(ModelLink c, topo::NetKind kind) const {
  if (c == ModelLink::kNetwork && kind != topo::NetKind::kUnknown) {
    auto it = links.find(std::string("network:") + topo::netKindName(kind));
    if (it != links.end()) return &it->second;
  }
  auto it = links.find(modelLinkName(c));
  return it == links.end() ? nullptr : &it->second;
}

std::vector<double> cacheWeights(const CacheLevels& levels, double workingSetBytes) {
  std::vector<double> w;
  double served = 0;  // share of the working set served by the levels so far
  for (const CacheLevel& l : levels) {
    const double upTo = workingSetBytes <= l.bytes ? 1.0 : l.bytes / workingSetBytes;
    w.push_back(std::max(0.0, upTo - served));
    served = std::max(served, upTo);
  }
  w.push_back(1.0 - served);
  return w;
}

double cachedBeta(double beta, const CacheLevels& levels, double workingSetBytes) {
  if (levels.empty()) return beta;
  const std::vector<double> w = cacheWeights(levels, workingSetBytes);
  double b = w.back() * beta;
  for (size_t i = 0; i < levels.size(); ++i) b += w[i] * levels[i].beta;
  return b;
}

CostParams defaultCostParams() {
  CostParams p;
  p.cpu = {1.0 / 6e9, 1.0 / 10e9};
  p.gpu = {1.0 / 1000e9, 1.0 / 1000e9};
  return p;
}

LinkCost defaultLinkCost(ModelLink c) {
  switch (c) {
    case ModelLink::kLoopback:
      // A send/recv pair through the kernel: two copies and a wakeup. Typical of a modern x86 core.
      return {10e-6, 1.0 / 4e9};
    case ModelLink::kShm:
    case ModelLink::kNvlink:
    case ModelLink::kPcie:
    case ModelLink::kSmp:
    case ModelLink::kNetwork: {
      static constexpr topo::LinkClass kTopo[] = {topo::LinkClass::kShm,    topo::LinkClass::kShm,
                                                  topo::LinkClass::kNvlink, topo::LinkClass::kPcie,
                                                  topo::LinkClass::kSmp,    topo::LinkClass::kNetwork};
      topo::LinkClassDefaults d = topo::linkClassDefaults(kTopo[static_cast<int>(c)]);
      return {d.alphaUs * 1e-6, 1.0 / (d.bandwidthGBs * 1e9)};
    }
  }
  return {1e-6, 1e-9};
}

CodecSpeed codecSpeed(const CostParams& params, const std::string& spec) {
  const compress::CodecParams cp = compress::parseCodecSpec(spec);
  const std::string canonical = compress::makeCodec(cp)->spec();
  for (const std::string& key : {spec, canonical, canonical.substr(0, canonical.find(':'))}) {
    auto it = params.codecs.find(key);
    if (it != params.codecs.end()) return it->second;
  }
  // Compressed collectives always encode with error feedback (worker and server residuals), so that is the cost.
  const compress::CodecCost c = compress::codecCost(cp);
  return {c.encodeEfSecondsPerByte > 0 ? c.encodeEfSecondsPerByte : c.encodeSecondsPerByte, c.decodeSecondsPerByte};
}

}  // namespace tern::planner
