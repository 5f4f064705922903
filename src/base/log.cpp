#include "base/log.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "base/env.hpp"

namespace tern {
namespace {

const char* kSubsysNames[] = {"INIT", "NET", "COLL", "SHM", "TOPO", "TUNE", "COMPRESS"};

struct LogConfig {
  LogLevel level = LogLevel::kWarn;
  bool subsysOn[static_cast<int>(Subsys::kCount)];
  FILE* out = stderr;
  std::string host;
};

// Expands %h and %p the way NCCL_DEBUG_FILE does.
std::string expandPath(const std::string& pattern, const std::string& host) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char c = pattern[++i];
      if (c == 'h') {
        out += host;
      } else if (c == 'p') {
        out += std::to_string(getpid());
      } else {
        out += '%';
        out += c;
      }
    } else {
      out += pattern[i];
    }
  }
  return out;
}

const LogConfig& config() {
  static const LogConfig cfg = [] {
    LogConfig c;
    const Knobs& k = knobs();
    if (k.debugLevel == "INFO") c.level = LogLevel::kInfo;
    if (k.debugLevel == "TRACE") c.level = LogLevel::kTrace;
    if (k.debugLevel == "NONE") c.level = LogLevel::kNone;
    bool exclude = !k.debugSubsys.empty() && k.debugSubsys[0] == '^';
    for (bool& on : c.subsysOn) on = k.debugSubsys.empty() || exclude;
    if (!k.debugSubsys.empty()) {
      std::string list = exclude ? k.debugSubsys.substr(1) : k.debugSubsys;
      size_t pos = 0;
      while (pos <= list.size()) {
        size_t comma = list.find(',', pos);
        std::string name = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        for (int i = 0; i < static_cast<int>(Subsys::kCount); ++i) {
          if (name == "ALL" || strcasecmp(name.c_str(), kSubsysNames[i]) == 0) c.subsysOn[i] = !exclude;
        }
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
    }
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    c.host = host;
    if (!k.debugFile.empty()) {
      FILE* f = std::fopen(expandPath(k.debugFile, c.host).c_str(), "w");
      if (f != nullptr) c.out = f;
    }
    return c;
  }();
  return cfg;
}

}  // namespace

bool logEnabled(LogLevel level, Subsys subsys) {
  const LogConfig& c = config();
  if (level > c.level) return false;
  return level == LogLevel::kWarn || c.subsysOn[static_cast<int>(subsys)];
}

void logLine(LogLevel level, Subsys subsys, int rank, const char* fmt, ...) {
  const LogConfig& c = config();
  char msg[2048];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt, args);
  va_end(args);
  static const char* levels[] = {"", "WARN", "INFO", "TRACE"};
  char rankText[16] = "-";
  if (rank >= 0) std::snprintf(rankText, sizeof(rankText), "%d", rank);
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(c.out, "%s:%d:%ld tern %s [%s] %s %s\n", c.host.c_str(), getpid(), syscall(SYS_gettid), rankText,
               kSubsysNames[static_cast<int>(subsys)], levels[static_cast<int>(level)], msg);
  std::fflush(c.out);
}

}  // namespace tern
