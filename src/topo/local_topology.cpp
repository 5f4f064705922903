#include "topo/local_topology.hpp"

#include <sched.h>

#include <chrono>
#include <map>
#include <mutex>

#include "topo/detect.hpp"
#include "topo/sysfs.hpp"
#include "topo/topo_file.hpp"

namespace tern::topo {

namespace {

std::mutex loadMutex;
int loads = 0;

// "0-3,8,10-11" -> CPUs set in *set; false on anything else.
bool parseCpuList(const std::string& list, cpu_set_t* set) {
  CPU_ZERO(set);
  size_t pos = 0;
  while (pos < list.size()) {
    size_t end = list.find(',', pos);
    if (end == std::string::npos) end = list.size();
    const std::string item = list.substr(pos, end - pos);
    const size_t dash = item.find('-');
    try {
      const int lo = std::stoi(item.substr(0, dash));
      const int hi = dash == std::string::npos ? lo : std::stoi(item.substr(dash + 1));
      if (lo < 0 || hi < lo || hi >= CPU_SETSIZE) return false;
      for (int c = lo; c <= hi; ++c) CPU_SET(c, set);
    } catch (const std::exception&) {
      return false;
    }
    pos = end + 1;
  }
  return true;
}

}  // namespace

std::shared_ptr<const LocalTopology> processLocalTopology(const std::string& topoFile, bool* cached) {
  static std::map<std::string, std::shared_ptr<const LocalTopology>> byFile;
  // One detection at a time: ranks of one process (threads) wait for the first instead of detecting in parallel.
  std::lock_guard<std::mutex> lock(loadMutex);
  if (auto it = byFile.find(topoFile); it != byFile.end()) {
    if (cached != nullptr) *cached = true;
    return it->second;
  }
  if (cached != nullptr) *cached = false;
  const auto start = std::chrono::steady_clock::now();
  auto local = std::make_shared<LocalTopology>();
  if (topoFile.empty()) {
    local->host = detectHost();
    local->source = "detected";
  } else {
    Network network;
    local->host = hostFromTopologyFile(topoFile, &network);
    local->network = network;
    local->source = topoFile;
  }
  local->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++loads;
  byFile.emplace(topoFile, local);
  return local;
}

int localTopologyLoads() {
  std::lock_guard<std::mutex> lock(loadMutex);
  return loads;
}

int boundNumaNode() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return -1;
  int found = -1;
  for (const std::string& entry : sysfs::listDir("/sys/devices/system/node")) {
    if (entry.rfind("node", 0) != 0 || entry.size() == 4) continue;
    int index = -1;
    try {
      size_t used = 0;
      index = std::stoi(entry.substr(4), &used);
      if (used != entry.size() - 4) continue;
    } catch (const std::exception&) {
      continue;
    }
    cpu_set_t node;
    if (!parseCpuList(sysfs::readLine("/sys/devices/system/node/" + entry + "/cpulist"), &node)) continue;
    cpu_set_t both;
    CPU_AND(&both, &allowed, &node);
    if (CPU_COUNT(&both) == 0) continue;
    if (found >= 0) return -1;  // allowed on CPUs of two nodes: not bound
    found = index;
  }
  return found;
}

}  // namespace tern::topo
