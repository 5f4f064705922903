#include "core/algo_choice.hpp"

#include <algorithm>

#include "core/dtype.hpp"
#include "core/error.hpp"

namespace tern {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t next = s.find(sep, pos);
    std::string item = s.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    if (!item.empty()) out.push_back(item);
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return out;
}

size_t payloadBytes(const CollArgs& a, int nranks) {
  size_t e = dataTypeSize(a.dtype);
  switch (a.coll) {
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAlltoAll:
      return a.count * e * static_cast<size_t>(nranks);
    default:
      return a.count * e;
  }
}

// Preference order when no cost model applies: latency-bound algorithms first for small messages, bandwidth
// algorithms for large ones. The planner (cost model) replaces this where it has a topology.
std::vector<const char*> defaultPreference(const CollArgs& args, const ChoiceContext& ctx) {
  size_t bytes = payloadBytes(args, ctx.nranks);
  switch (args.coll) {
    case Collective::kAllReduce:
      if (ctx.multiHost) return {"hier", "ring"};
      return bytes <= 64 * 1024 ? std::vector<const char*>{"rd", "ring"} : std::vector<const char*>{"ring"};
    case Collective::kAllGather:
      return bytes <= 64 * 1024 ? std::vector<const char*>{"rd", "bruck", "ring"} : std::vector<const char*>{"ring"};
    case Collective::kReduceScatter:
      return {"ring"};
    case Collective::kBroadcast:
      return bytes <= 64 * 1024 ? std::vector<const char*>{"binomial", "chain"} : std::vector<const char*>{"chain"};
    case Collective::kReduce:
      return bytes <= 64 * 1024 ? std::vector<const char*>{"binomial", "chain"} : std::vector<const char*>{"chain"};
    case Collective::kAlltoAll:
    case Collective::kAlltoAllv:
      return {"pairwise"};
    case Collective::kBarrier:
      return {"dissemination"};
    default:
      return {};
  }
}

}  // namespace

Collective parseCollectiveName(const std::string& name, bool* ok) {
  static const std::pair<const char*, Collective> names[] = {
      {"allreduce", Collective::kAllReduce},   {"allgather", Collective::kAllGather},
      {"reducescatter", Collective::kReduceScatter}, {"broadcast", Collective::kBroadcast},
      {"reduce", Collective::kReduce},         {"alltoall", Collective::kAlltoAll},
      {"alltoallv", Collective::kAlltoAllv},   {"barrier", Collective::kBarrier}};
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  lower.erase(std::remove(lower.begin(), lower.end(), '_'), lower.end());
  for (const auto& [n, c] : names) {
    if (lower == n) {
      *ok = true;
      return c;
    }
  }
  *ok = false;
  return Collective::kCount;
}

AlgoOverride AlgoOverride::parse(const std::string& spec) {
  AlgoOverride o;
  for (const std::string& clause : split(spec, ';')) {
    Rule rule;
    rule.collective = Collective::kCount;
    std::string body = clause;
    size_t colon = clause.find(':');
    if (colon != std::string::npos) {
      bool ok = false;
      rule.collective = parseCollectiveName(clause.substr(0, colon), &ok);
      if (!ok) throwError(ternInvalidArgument, "TERN_ALGO: unknown collective '%s' in '%s'",
                          clause.substr(0, colon).c_str(), spec.c_str());
      body = clause.substr(colon + 1);
    }
    if (!body.empty() && body[0] == '^') {
      rule.exclude = true;
      body = body.substr(1);
    }
    rule.names = split(body, ',');
    for (const auto& n : rule.names) {
      bool known = std::any_of(algorithms().begin(), algorithms().end(), [&](const AlgorithmInfo& a) {
        return n == a.name && (rule.collective == Collective::kCount || rule.collective == a.collective);
      });
      if (!known) throwError(ternInvalidArgument, "TERN_ALGO: unknown algorithm '%s' in '%s'", n.c_str(), spec.c_str());
    }
    o.rules.push_back(rule);
  }
  return o;
}

std::string AlgoOverride::forced(Collective c) const {
  for (const Rule& r : rules) {
    if (r.exclude || (r.collective != c && r.collective != Collective::kCount)) continue;
    for (const auto& n : r.names) {
      if (findAlgorithm(c, n) != nullptr) return n;
    }
  }
  return "";
}

bool AlgoOverride::excluded(Collective c, const std::string& name) const {
  for (const Rule& r : rules) {
    if (!r.exclude || (r.collective != c && r.collective != Collective::kCount)) continue;
    if (std::find(r.names.begin(), r.names.end(), name) != r.names.end()) return true;
  }
  return false;
}

const AlgorithmInfo& chooseAlgorithm(const CollArgs& args, const ChoiceContext& ctx, const AlgoOverride& override) {
  std::string forced = override.forced(args.coll);
  if (!forced.empty()) return *findAlgorithm(args.coll, forced);
  for (const char* name : defaultPreference(args, ctx)) {
    const AlgorithmInfo* a = findAlgorithm(args.coll, name);
    if (a != nullptr && !override.excluded(args.coll, name)) return *a;
  }
  for (const AlgorithmInfo& a : algorithms()) {
    if (a.collective == args.coll && !override.excluded(args.coll, a.name)) return a;
  }
  throwError(ternInvalidUsage, "no algorithm available for %s (all excluded by TERN_ALGO?)",
             collectiveName(args.coll));
}

}  // namespace tern
