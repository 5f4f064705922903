#include "transport/ibverbs/ib_settings.hpp"

#include <cerrno>
#include <cstdlib>

#include "base/env.hpp"
#include "base/error.hpp"

namespace tern::ib {

namespace {

// Integer with an optional K/M/G suffix (powers of 1024) within [lo, hi].
long long parseNumber(const char* name, const std::string& text, long long lo, long long hi, bool sizeSuffix) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || errno != 0) {
    throwError(ternInvalidArgument, "TERN_%s='%s': not a number", name, text.c_str());
  }
  if (sizeSuffix && *end != '\0' && end[1] == '\0') {
    switch (*end) {
      case 'k':
      case 'K':
        v *= 1024;
        ++end;
        break;
      case 'm':
      case 'M':
        v *= 1024 * 1024;
        ++end;
        break;
      case 'g':
      case 'G':
        v *= 1024LL * 1024 * 1024;
        ++end;
        break;
      default:
        break;
    }
  }
  if (*end != '\0') throwError(ternInvalidArgument, "TERN_%s='%s': not a number", name, text.c_str());
  if (v < lo || v > hi) {
    throwError(ternInvalidArgument, "TERN_%s=%s: out of range (%lld..%lld)", name, text.c_str(), lo, hi);
  }
  return v;
}

}  // namespace

Settings parseSettings(const std::function<std::optional<std::string>(const char*)>& lookup) {
  Settings s;
  if (auto v = lookup("IB_HCA")) s.hca = HcaSpec::parse(*v);
  if (auto v = lookup("IB_GID_INDEX")) s.gidIndex = static_cast<int>(parseNumber("IB_GID_INDEX", *v, -1, 65535, false));
  if (auto v = lookup("IB_CHUNK_BYTES")) {
    s.chunkBytes = static_cast<size_t>(parseNumber("IB_CHUNK_BYTES", *v, 4096, 64LL << 20, true));
  }
  if (auto v = lookup("IB_SLOTS")) s.slots = static_cast<uint32_t>(parseNumber("IB_SLOTS", *v, 2, 1024, false));
  if (auto v = lookup("IB_TIMEOUT")) s.tuning.timeout = static_cast<int>(parseNumber("IB_TIMEOUT", *v, 1, 31, false));
  if (auto v = lookup("IB_RETRY_CNT")) {
    s.tuning.retryCount = static_cast<int>(parseNumber("IB_RETRY_CNT", *v, 0, 7, false));
  }
  if (auto v = lookup("IB_SL")) s.tuning.serviceLevel = static_cast<int>(parseNumber("IB_SL", *v, 0, 15, false));
  if (auto v = lookup("IB_TC")) s.tuning.trafficClass = static_cast<int>(parseNumber("IB_TC", *v, 0, 255, false));
  return s;
}

Settings settingsFromEnv() {
  return parseSettings([](const char* name) { return envString(name); });
}

}  // namespace tern::ib
