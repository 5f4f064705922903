#include "rank_env.hpp"

#include <unistd.h>

#include <algorithm>

namespace tern::run {
namespace {

void Set(std::vector<std::pair<std::string, std::string>>& vars, std::string name, std::string value) {
  auto it = std::find_if(vars.begin(), vars.end(), [&](const auto& v) { return v.first == name; });
  if (it != vars.end()) {
    it->second = std::move(value);
  } else {
    vars.emplace_back(std::move(name), std::move(value));
  }
}

}  // namespace

RankEnvironment::RankEnvironment(const std::vector<std::string>& base,
                                 const std::vector<std::pair<std::string, std::string>>& extra, JobContract contract)
    : contract_(std::move(contract)) {
  for (const std::string& entry : base) {
    size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;  // malformed entries cannot be passed on meaningfully
    Set(vars_, entry.substr(0, eq), entry.substr(eq + 1));
  }
  for (const auto& [name, value] : extra) Set(vars_, name, value);
  // The contract goes last so that a stale TERN_RANK inherited from an outer launcher cannot leak through.
  Set(vars_, "TERN_WORLD_SIZE", std::to_string(contract_.world_size));
  Set(vars_, "TERN_LOCAL_SIZE", std::to_string(contract_.local_size > 0 ? contract_.local_size : contract_.world_size));
  Set(vars_, "TERN_ROOT_ADDR", contract_.root_addr);
  Set(vars_, "TERN_SECRET", contract_.secret);
}

std::vector<std::string> RankEnvironment::ForRank(int local_rank) const {
  std::vector<std::pair<std::string, std::string>> vars = vars_;
  Set(vars, "TERN_RANK", std::to_string(contract_.rank_offset + local_rank * contract_.rank_stride));
  Set(vars, "TERN_LOCAL_RANK", std::to_string(local_rank));
  std::vector<std::string> out;
  out.reserve(vars.size());
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

}  // namespace tern::run
