// What the baseline drivers (gloo_allreduce, mpi_allreduce, stream_add) share: nccl-tests' size spelling and time
// column, their JSON records, and the input pattern whose sums are exact. Header-only: the drivers link neither tern
// nor each other, so that they build while tern itself is mid-edit.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace tern::compare {

// Parses "256M", "4k", "1G", "8" into bytes. Suffixes are powers of 1024, exactly as nccl-tests' -b/-e, so the same
// command-line spelling gives the same byte counts in every tool.
inline std::optional<size_t> ParseBytes(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (end == s.c_str()) return std::nullopt;
  size_t mult = 1;
  const std::string suffix(end);
  if (suffix == "K" || suffix == "k") {
    mult = 1ull << 10;
  } else if (suffix == "M" || suffix == "m") {
    mult = 1ull << 20;
  } else if (suffix == "G" || suffix == "g") {
    mult = 1ull << 30;
  } else if (!suffix.empty()) {
    return std::nullopt;
  }
  return static_cast<size_t>(v) * mult;
}

// nccl-tests' time formatting: keep the column 7 wide whatever the magnitude.
inline std::string FormatTime(double us) {
  char buf[32];
  if (us >= 10000.0) {
    std::snprintf(buf, sizeof(buf), "%7.0f", us);
  } else if (us >= 100.0) {
    std::snprintf(buf, sizeof(buf), "%7.1f", us);
  } else {
    std::snprintf(buf, sizeof(buf), "%7.2f", us);
  }
  return buf;
}

// One measured size, as the drivers' -J JSON lists them.
struct Record {
  size_t bytes;
  size_t count;
  double time_us;
  double algbw;
  double busbw;
  long wrong;             // -1: not checked
  std::string algorithm;  // what ran, where the driver chooses per size (empty: the one named in the header)
};

inline void WriteJson(const char* tool, const std::string& path, const std::vector<Record>& records) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "%s: cannot write %s: %s\n", tool, path.c_str(), std::strerror(errno));
    return;
  }
  std::fprintf(f, "[\n");
  for (size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    std::fprintf(f, "  {\"size\": %zu, \"count\": %zu, \"time_us\": %.3f, \"algbw\": %.4f, \"busbw\": %.4f, ", r.bytes,
                 r.count, r.time_us, r.algbw, r.busbw);
    if (!r.algorithm.empty()) std::fprintf(f, "\"algorithm\": \"%s\", ", r.algorithm.c_str());
    if (r.wrong < 0) {
      std::fprintf(f, "\"wrong\": null}%s\n", i + 1 < records.size() ? "," : "");
    } else {
      std::fprintf(f, "\"wrong\": %ld}%s\n", r.wrong, i + 1 < records.size() ? "," : "");
    }
  }
  std::fprintf(f, "]\n");
  std::fclose(f);
}

// Value rank `rank` contributes at element i. Small integers, so every partial sum is exact in float32 whatever
// order the library adds them in; a prime period so a misplaced chunk shows up as wrong values.
inline float InputValue(int rank, size_t i) { return static_cast<float>((rank + 1) * static_cast<int>(i % 1021 + 1)); }

}  // namespace tern::compare
