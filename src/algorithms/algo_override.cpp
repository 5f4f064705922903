#include "algorithms/algo_override.hpp"

#include <algorithm>

#include "algorithms/registry.hpp"
#include "base/error.hpp"

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

}  // namespace

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
      if (!ok)
        throwError(ternInvalidArgument, "TERN_ALGO: unknown collective '%s' in '%s'", clause.substr(0, colon).c_str(),
                   spec.c_str());
      body = clause.substr(colon + 1);
    }
    if (!body.empty() && body[0] == '^') {
      rule.exclude = true;
      body = body.substr(1);
    }
    rule.names = split(body, ',');
    for (const auto& n : rule.names) {
      bool known = false, selectable = false;
      for (const AlgorithmInfo& a : catalogue()) {
        if (n != a.name || (rule.collective != Collective::kCount && rule.collective != a.collective)) continue;
        known = true;
        selectable = selectable || a.family != AlgorithmFamily::kCompressed;
      }
      if (!known) throwError(ternInvalidArgument, "TERN_ALGO: unknown algorithm '%s' in '%s'", n.c_str(), spec.c_str());
      if (!selectable) {
        throwError(ternInvalidArgument,
                   "TERN_ALGO: '%s' in '%s' is a compressed algorithm: TERN_COMPRESS (and the codec) choose those",
                   n.c_str(), spec.c_str());
      }
    }
    o.rules.push_back(rule);
  }
  return o;
}

std::string AlgoOverride::forced(Collective c) const {
  for (const Rule& r : rules) {
    if (r.exclude || (r.collective != c && r.collective != Collective::kCount)) continue;
    for (const auto& n : r.names) {
      const AlgorithmInfo* a = findEntry(c, n);
      if (a != nullptr && a->family != AlgorithmFamily::kCompressed) return n;
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

}  // namespace tern
