#include "core/env.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace tern {

std::optional<std::string> envString(const char* name) {
  std::string full = std::string("TERN_") + name;
  const char* v = std::getenv(full.c_str());
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

long envInt(const char* name, long fallback) {
  auto v = envString(name);
  if (!v) return fallback;
  char* end = nullptr;
  long x = std::strtol(v->c_str(), &end, 0);
  return (end && *end == '\0') ? x : fallback;
}

bool envFlag(const char* name, bool fallback) {
  auto v = envString(name);
  if (!v) return fallback;
  return *v == "1" || *v == "true" || *v == "yes" || *v == "on";
}

const Knobs& knobs() {
  static const Knobs k = [] {
    Knobs x;
    x.debugLevel = envString("DEBUG").value_or("");
    x.debugSubsys = envString("DEBUG_SUBSYS").value_or("");
    x.debugFile = envString("DEBUG_FILE").value_or("");
    x.timeoutSec = static_cast<int>(envInt("TIMEOUT", 300));
    x.nSocketsPerPeer = static_cast<int>(envInt("NSOCKS", 2));
    x.socketIfname = envString("SOCKET_IFNAME").value_or("");
    x.transport = envString("TRANSPORT").value_or("");
    x.algo = envString("ALGO").value_or("");
    x.hostId = envString("HOSTID").value_or("");
    x.shmDisable = envFlag("SHM_DISABLE", false);
    x.chunkBytes = envInt("CHUNK_BYTES", 0);
    const std::string order = envString("RING_ORDER").value_or("topology");
    if (order != "topology" && order != "rank") {
      std::fprintf(stderr, "tern: TERN_RING_ORDER must be 'topology' or 'rank', got '%s'; using topology\n",
                   order.c_str());
    }
    x.ringOrderByRank = order == "rank";
    x.compress = envString("COMPRESS").value_or("");
    x.compressMinBytes = envInt("COMPRESS_MIN_BYTES", 64 * 1024);
    const std::string when = envString("COMPRESS_WHEN").value_or("model");
    if (when != "model" && when != "always") {
      std::fprintf(stderr, "tern: TERN_COMPRESS_WHEN must be 'model' or 'always', got '%s'; using model\n",
                   when.c_str());
    }
    x.compressAlways = when == "always";
    const std::optional<std::string> hier = envString("COMPRESS_HIER");
    x.compressHier = !hier || *hier == "auto" ? -1 : envFlag("COMPRESS_HIER", false) ? 1 : 0;
    x.topoFile = envString("TOPO_FILE").value_or("");
    x.topoDumpFile = envString("TOPO_DUMP_FILE").value_or("");
    return x;
  }();
  return k;
}

}  // namespace tern
