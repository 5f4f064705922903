#include "explain.hpp"

#include <algorithm>
#include <map>

#include "core/algo_choice.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "planner/units.hpp"

namespace tern::calc {

using namespace tern::planner;

std::string limitedBy(const Breakdown& b) {
  const double total = b.total();
  if (total <= 0) return "-";
  std::string what = "reduction";
  double most = b.reduce;
  auto consider = [&](double v, const std::string& name) {
    if (v > most) {
      most = v;
      what = name;
    }
  };
  consider(b.copy, "copies");
  consider(b.codec, "codec");
  for (int c = 0; c < kNumModelLinks; ++c) {
    consider(b.latency[c], std::string(modelLinkName(static_cast<ModelLink>(c))) + " latency");
    consider(b.transfer[c], std::string(modelLinkName(static_cast<ModelLink>(c))) + " bandwidth");
  }
  return what + " (" + formatNumber(100.0 * most / total, 2) + "%)";
}

std::string busiest(const Estimate& e) {
  if (e.busiestPort.empty()) return "";
  std::string out = e.busiestPort + " " + formatNumber(100.0 * std::min(1.0, e.busiestUtilization), 2) + "%";
  if (e.busiestUsers > 1) out += ", shared by " + std::to_string(e.busiestUsers) + " ranks";
  return out;
}

double networkLineRate(const Planner& p) {
  double rate = 0;
  for (int a = 0; a < p.nranks(); ++a) {
    for (int b = 0; b < p.nranks(); ++b) {
      const PairLink& l = p.links().pair(a, b);
      if (a != b && l.cls == ModelLink::kNetwork && (rate == 0 || l.lineGBs * 1e9 < rate)) rate = l.lineGBs * 1e9;
    }
  }
  return rate;
}

int ranksPerNic(const Planner& p) {
  int most = 0;
  for (int port = 0; port < p.links().numPorts(); ++port) {
    if (p.links().portName(port).find("egress") != std::string::npos) most = std::max(most, p.links().portUsers(port));
  }
  return most;
}

std::string linksSummary(const Planner& p) {
  std::string out;
  for (int c = 0; c < kNumModelLinks; ++c) {
    const ModelLink m = static_cast<ModelLink>(c);
    if (!p.links().hasClass(m)) continue;
    const LinkCost lc = p.links().classCost(m);
    std::string line = format("%s: %s latency, %s", modelLinkName(m), formatTime(lc.alpha).c_str(),
                              formatRate(lc.beta > 0 ? 1.0 / lc.beta : 0).c_str());
    if (m == ModelLink::kNetwork) {
      line += format(" per NIC (%s %s line rate), %d rank%s per NIC", topo::netKindName(p.job().network.kind),
                     formatLineRate(networkLineRate(p)).c_str(), ranksPerNic(p), ranksPerNic(p) == 1 ? "" : "s");
    }
    out += (out.empty() ? "" : "; ") + line;
  }
  const ComputeCost& cc = p.links().compute(0);
  out += format("; reduce %s", formatRate(1.0 / cc.reduceBeta).c_str());
  return out;
}

Collective parseCollective(const std::string& name) {
  bool ok = false;
  const Collective c = parseCollectiveName(name, &ok);
  if (!ok || c == Collective::kAlltoAllv) {
    throwError(ternInvalidArgument,
               "unknown collective '%s' (allreduce, allgather, reducescatter, broadcast, reduce, "
               "alltoall, barrier)",
               name.c_str());
  }
  return c;
}

ternDataType_t parseDtype(const std::string& name) {
  static const std::map<std::string, ternDataType_t> kNames = {
      {"float", ternFloat32},  {"fp32", ternFloat32},    {"float32", ternFloat32}, {"half", ternFloat16},
      {"fp16", ternFloat16},   {"float16", ternFloat16}, {"bf16", ternBfloat16},   {"bfloat16", ternBfloat16},
      {"double", ternFloat64}, {"fp64", ternFloat64},    {"int32", ternInt32},     {"int8", ternInt8},
      {"uint8", ternUint8},    {"int64", ternInt64},     {"uint32", ternUint32},   {"uint64", ternUint64}};
  auto it = kNames.find(name);
  if (it == kNames.end())
    throwError(ternInvalidArgument, "unknown element type '%s' (float, half, bf16, double, ...)", name.c_str());
  return it->second;
}

}  // namespace tern::calc
