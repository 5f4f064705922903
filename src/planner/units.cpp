#include "planner/units.hpp"

#include <cmath>
#include <cstdlib>
#include <map>

#include "base/error.hpp"

namespace tern::planner {

namespace {

// Splits "102.4MB" into 102.4 and "MB"; throws for a missing or negative number.
double leadingNumber(std::string_view text, std::string* unit, const char* what) {
  const std::string s(text);
  if (s.empty()) throwError(ternInvalidArgument, "bad %s '': empty", what);
  const char* begin = s.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin) throwError(ternInvalidArgument, "bad %s '%s': expected a number first", what, s.c_str());
  if (!std::isfinite(v)) throwError(ternInvalidArgument, "bad %s '%s': not a finite number", what, s.c_str());
  if (v < 0) throwError(ternInvalidArgument, "bad %s '%s': must not be negative", what, s.c_str());
  *unit = std::string(end);
  while (!unit->empty() && unit->front() == ' ') unit->erase(unit->begin());
  while (!unit->empty() && unit->back() == ' ') unit->pop_back();
  return v;
}

}  // namespace

double parseBytes(std::string_view text) {
  std::string unit;
  const double v = leadingNumber(text, &unit, "size");
  static const std::map<std::string, double> kUnits = {
      {"", 1},
      {"B", 1},
      {"kB", 1e3},
      {"KB", 1e3},
      {"MB", 1e6},
      {"GB", 1e9},
      {"TB", 1e12},
      {"KiB", 1024.0},
      {"MiB", 1048576.0},
      {"GiB", 1073741824.0},
      {"TiB", 1099511627776.0},
      {"K", 1024.0},
      {"M", 1048576.0},
      {"G", 1073741824.0},
      {"T", 1099511627776.0},
      {"k", 1024.0},
      {"m", 1048576.0},
      {"g", 1073741824.0},
  };
  auto it = kUnits.find(unit);
  if (it == kUnits.end()) {
    throwError(ternInvalidArgument, "bad size '%s': unknown unit '%s' (B, kB, MB, GB, TB, KiB, MiB, GiB, K, M, G)",
               std::string(text).c_str(), unit.c_str());
  }
  return v * it->second;
}

double parseRate(std::string_view text, RateDefault bare) {
  std::string unit;
  const double v = leadingNumber(text, &unit, "rate");
  std::string u = unit;
  // Normalize the "per second" spellings: "/s", "ps", "it/s" (bit/s), "it" (gbit).
  bool perSecond = false;
  for (const char* suffix : {"/s", "ps"}) {
    const std::string sfx(suffix);
    if (u.size() > sfx.size() && u.compare(u.size() - sfx.size(), sfx.size(), sfx) == 0) {
      u.erase(u.size() - sfx.size());
      perSecond = true;
      break;
    }
  }
  (void)perSecond;
  double prefix = 1;
  size_t i = 0;
  if (!u.empty()) {
    switch (u[0]) {
      case 'k':
      case 'K':
        prefix = 1e3;
        i = 1;
        break;
      case 'M':
      case 'm':
        prefix = 1e6;
        i = 1;
        break;
      case 'G':
      case 'g':
        prefix = 1e9;
        i = 1;
        break;
      case 'T':
      case 't':
        prefix = 1e12;
        i = 1;
        break;
      default:
        break;
    }
  }
  std::string rest = u.substr(i);
  bool binary = false;
  if (rest.rfind('i', 0) == 0 && rest.size() > 1 && rest[1] == 'B') {
    binary = true;
    rest.erase(0, 1);
  }
  if (binary) prefix = prefix == 1e3 ? 1024.0 : prefix == 1e6 ? 1048576.0 : prefix == 1e9 ? 1073741824.0 : prefix;
  double bytesPer = 0;
  if (rest == "B" || rest == "byte" || rest == "bytes") {
    bytesPer = 1;
  } else if (rest == "b" || rest == "bit" || rest == "bits") {
    bytesPer = 1.0 / 8;
  } else if (rest.empty() && (i == 1 || unit.empty())) {
    bytesPer = bare == RateDefault::kBits ? 1.0 / 8 : 1;
  } else {
    throwError(ternInvalidArgument, "bad rate '%s': unknown unit '%s' (GB/s, Gb/s, Gbps, gbit, MB/s, ...)",
               std::string(text).c_str(), unit.c_str());
  }
  return v * prefix * bytesPer;
}

double parseCount(std::string_view text) {
  std::string unit;
  const double v = leadingNumber(text, &unit, "count");
  static const std::map<std::string, double> kUnits = {{"", 1},    {"K", 1e3}, {"k", 1e3}, {"M", 1e6}, {"m", 1e6},
                                                       {"B", 1e9}, {"G", 1e9}, {"b", 1e9}, {"T", 1e12}};
  auto it = kUnits.find(unit);
  if (it == kUnits.end()) {
    throwError(ternInvalidArgument, "bad count '%s': unknown suffix '%s' (K, M, B, T)", std::string(text).c_str(),
               unit.c_str());
  }
  return v * it->second;
}

Sweep parseSweep(std::string_view text) {
  const std::string s(text);
  const size_t a = s.find(':');
  if (a == std::string::npos)
    throwError(ternInvalidArgument, "bad sweep '%s': expected FIRST:LAST[:xFACTOR]", s.c_str());
  const size_t b = s.find(':', a + 1);
  Sweep w;
  w.first = parseBytes(s.substr(0, a));
  w.last = parseBytes(s.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1));
  if (b != std::string::npos) {
    std::string f = s.substr(b + 1);
    if (!f.empty() && (f[0] == 'x' || f[0] == '*')) f.erase(0, 1);
    std::string unit;
    w.factor = leadingNumber(f, &unit, "sweep factor");
    if (!unit.empty() || w.factor <= 1)
      throwError(ternInvalidArgument, "bad sweep '%s': the factor must be > 1", s.c_str());
  }
  if (w.first < 1 || w.last < w.first) {
    throwError(ternInvalidArgument, "bad sweep '%s': need 1 B <= FIRST <= LAST", s.c_str());
  }
  return w;
}

std::string formatNumber(double x, int digits) {
  if (x == 0) return "0";
  char buf[64];
  const int mag = static_cast<int>(std::floor(std::log10(std::fabs(x))));
  const int decimals = std::max(0, digits - 1 - mag);
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, x);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

std::string formatBytes(double bytes) {
  static const char* kBinary[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  static const char* kDecimal[] = {"B", "kB", "MB", "GB", "TB"};
  if (bytes >= 1024 && bytes == std::floor(bytes)) {
    // Exact multiples of a binary unit read best in it (sweeps are powers of two).
    int k = 0;
    double v = bytes;
    while (k < 4 && v >= 1024 && std::fmod(v, 1024) == 0) {
      v /= 1024;
      ++k;
    }
    if (k > 0 && v < 1024) return formatNumber(v) + " " + kBinary[k];
  }
  int k = 0;
  double v = bytes;
  while (k < 4 && v >= 1000) {
    v /= 1000;
    ++k;
  }
  return formatNumber(v) + " " + kDecimal[k];
}

std::string formatRate(double bps) {
  static const char* kUnits[] = {"B/s", "kB/s", "MB/s", "GB/s", "TB/s"};
  int k = 0;
  double v = bps;
  while (k < 4 && v >= 1000) {
    v /= 1000;
    ++k;
  }
  return formatNumber(v) + " " + kUnits[k];
}

std::string formatLineRate(double bps) {
  static const char* kUnits[] = {"b/s", "kb/s", "Mb/s", "Gb/s", "Tb/s"};
  int k = 0;
  double v = bps * 8;
  while (k < 4 && v >= 1000) {
    v /= 1000;
    ++k;
  }
  return formatNumber(v) + " " + kUnits[k];
}

std::string formatTime(double s) {
  if (!std::isfinite(s) || s < 0) return "n/a";
  if (s >= 1) return formatNumber(s, 3) + " s";
  if (s >= 1e-3) return formatNumber(s * 1e3, 3) + " ms";
  if (s >= 1e-6) return formatNumber(s * 1e6, 3) + " us";
  return formatNumber(s * 1e9, 3) + " ns";
}

}  // namespace tern::planner
