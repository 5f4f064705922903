// NCCL_* variables mapped onto tern's knobs where tern has one, when the library loads, before tern reads its
// environment (on first use). A TERN_* variable that is set wins. Names with no tern counterpart are reported, not
// silently dropped.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

namespace {

void mapVariable(const char* from, const char* to) {
  const char* v = std::getenv(from);
  if (v != nullptr && *v != '\0' && std::getenv(to) == nullptr) setenv(to, v, 0);
}

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

void mapDebug() {
  const char* v = std::getenv("NCCL_DEBUG");
  if (v != nullptr && std::getenv("TERN_DEBUG") == nullptr) {
    std::string level = lower(v);
    const char* t = level == "info" ? "INFO" : level == "trace" ? "TRACE" : "WARN";  // VERSION, WARN, ABORT
    setenv("TERN_DEBUG", t, 0);
  }
  const char* subsys = std::getenv("NCCL_DEBUG_SUBSYS");
  if (subsys != nullptr && std::getenv("TERN_DEBUG_SUBSYS") == nullptr) {
    std::string in = subsys, out;
    bool exclude = !in.empty() && in[0] == '^';
    if (exclude) in = in.substr(1);
    static const std::map<std::string, std::string> names = {
        {"init", "INIT"}, {"bootstrap", "INIT"}, {"env", "INIT"}, {"coll", "COLL"},  {"p2p", "COLL"},
        {"call", "COLL"}, {"shm", "SHM"},        {"net", "NET"},  {"graph", "TOPO"}, {"tuning", "TUNE"}};
    size_t pos = 0;
    bool all = false;
    while (pos <= in.size()) {
      size_t comma = in.find(',', pos);
      std::string name = lower(in.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
      if (name == "all") all = true;
      auto it = names.find(name);
      if (it != names.end() && out.find(it->second) == std::string::npos) out += (out.empty() ? "" : ",") + it->second;
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    if (!all && !out.empty()) setenv("TERN_DEBUG_SUBSYS", ((exclude ? "^" : "") + out).c_str(), 0);
  }
}

void mapAlgo() {
  const char* v = std::getenv("NCCL_ALGO");
  if (v == nullptr || *v == '\0' || std::getenv("TERN_ALGO") != nullptr) return;
  // NCCL's syntax ("Ring,Tree", "^NVLS", "allreduce:tree;broadcast:ring") is TERN_ALGO's, case aside; only Ring
  // and Tree have tern counterparts of the same name.
  std::string value = lower(v);
  std::string word;
  for (size_t i = 0; i <= value.size(); ++i) {
    char ch = i < value.size() ? value[i] : ';';
    if (ch == ',' || ch == ';' || ch == '^') {
      if (!word.empty() && word != "ring" && word != "tree") {
        std::fprintf(stderr, "tern: NCCL_ALGO=%s names '%s', which tern has no counterpart for; not applied\n", v,
                     word.c_str());
        return;
      }
      word.clear();
    } else if (ch == ':') {
      word.clear();  // a collective name
    } else {
      word += ch;
    }
  }
  setenv("TERN_ALGO", value.c_str(), 0);
}

void mapNetwork() {
  const char* net = std::getenv("NCCL_NET");
  if (net != nullptr && std::getenv("TERN_TRANSPORT") == nullptr) {
    std::string n = lower(net);
    if (n == "socket") {
      setenv("TERN_TRANSPORT", "tcp", 0);
    } else if (n == "ib") {
      setenv("TERN_TRANSPORT", "ibverbs", 0);
    } else {
      std::fprintf(stderr, "tern: NCCL_NET=%s has no tern counterpart (Socket -> tcp, IB -> ibverbs); not applied\n",
                   net);
    }
  }
  // NCCL opens NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD sockets per peer; tern's knob is the product.
  const char* threads = std::getenv("NCCL_SOCKET_NTHREADS");
  const char* perThread = std::getenv("NCCL_NSOCKS_PERTHREAD");
  if ((threads != nullptr || perThread != nullptr) && std::getenv("TERN_NSOCKS") == nullptr) {
    long t = threads != nullptr ? std::strtol(threads, nullptr, 10) : 1;
    long p = perThread != nullptr ? std::strtol(perThread, nullptr, 10) : 1;
    if (t >= 1 && p >= 1 && t * p <= 64) setenv("TERN_NSOCKS", std::to_string(t * p).c_str(), 0);
  }
}

__attribute__((constructor)) void mapNcclEnvironment() {
  mapDebug();
  mapAlgo();
  mapNetwork();
  mapVariable("NCCL_DEBUG_FILE", "TERN_DEBUG_FILE");
  mapVariable("NCCL_SOCKET_IFNAME", "TERN_SOCKET_IFNAME");
  mapVariable("NCCL_SHM_DISABLE", "TERN_SHM_DISABLE");
  mapVariable("NCCL_TOPO_FILE", "TERN_TOPO_FILE");
  mapVariable("NCCL_IB_HCA", "TERN_IB_HCA");
  mapVariable("NCCL_IB_GID_INDEX", "TERN_IB_GID_INDEX");
  mapVariable("NCCL_IB_TIMEOUT", "TERN_IB_TIMEOUT");
  mapVariable("NCCL_IB_RETRY_CNT", "TERN_IB_RETRY_CNT");
  mapVariable("NCCL_IB_SL", "TERN_IB_SL");
  mapVariable("NCCL_IB_TC", "TERN_IB_TC");
}

}  // namespace
