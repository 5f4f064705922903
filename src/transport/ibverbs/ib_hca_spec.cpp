#include "transport/ibverbs/ib_hca_spec.hpp"

#include <cstdlib>

#include "base/error.hpp"

namespace tern::ib {

namespace {

bool startsWith(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

}  // namespace

HcaSpec HcaSpec::parse(const std::string& text) {
  HcaSpec spec;
  size_t i = 0;
  while (i < text.size() && text[i] == ' ') ++i;
  if (i < text.size() && text[i] == '^') {
    spec.exclude = true;
    ++i;
  }
  if (i < text.size() && text[i] == '=') {
    spec.exact = true;
    ++i;
  }
  std::string rest = text.substr(i);
  if (rest.empty()) {
    if (spec.exclude || spec.exact) throwError(ternInvalidArgument, "TERN_IB_HCA='%s': no device named", text.c_str());
    return spec;
  }
  size_t start = 0;
  while (start <= rest.size()) {
    size_t comma = rest.find(',', start);
    std::string item = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? rest.size() + 1 : comma + 1;
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.empty()) throwError(ternInvalidArgument, "TERN_IB_HCA='%s': empty device name", text.c_str());
    HcaEntry e;
    size_t colon = item.find(':');
    e.name = item.substr(0, colon);
    if (e.name.empty()) throwError(ternInvalidArgument, "TERN_IB_HCA='%s': empty device name", text.c_str());
    if (colon != std::string::npos) {
      std::string port = item.substr(colon + 1);
      char* end = nullptr;
      long p = std::strtol(port.c_str(), &end, 10);
      if (port.empty() || *end != '\0' || p < 1 || p > 255) {
        throwError(ternInvalidArgument, "TERN_IB_HCA='%s': bad port '%s' for %s (expected 1..255)", text.c_str(),
                   port.c_str(), e.name.c_str());
      }
      e.port = static_cast<int>(p);
    }
    spec.entries.push_back(e);
  }
  return spec;
}

bool HcaSpec::selects(const std::string& device, int port) const {
  if (entries.empty()) return true;
  bool listed = false;
  for (const HcaEntry& e : entries) {
    bool nameMatches = exact ? device == e.name : startsWith(device, e.name);
    if (nameMatches && (e.port < 0 || e.port == port)) listed = true;
  }
  return exclude ? !listed : listed;
}

std::string HcaSpec::toString() const {
  std::string s = std::string(exclude ? "^" : "") + (exact ? "=" : "");
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) s += ",";
    s += entries[i].name;
    if (entries[i].port >= 0) s += ":" + std::to_string(entries[i].port);
  }
  return s;
}

std::vector<PortInfo> selectPorts(const HcaSpec& spec, const std::vector<PortInfo>& all) {
  std::vector<PortInfo> out;
  for (const PortInfo& p : all) {
    if (p.active && spec.selects(p.device, p.port)) out.push_back(p);
  }
  return out;
}

const PortInfo& portForRank(const std::vector<PortInfo>& selected, int rank) {
  if (selected.empty()) throwError(ternInternalError, "ibverbs: no port to choose from");
  return selected[static_cast<size_t>(rank < 0 ? 0 : rank) % selected.size()];
}

}  // namespace tern::ib
