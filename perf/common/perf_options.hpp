// Command-line options of the perf binaries: the nccl-tests flags (-b -e -f -i -n -w -c -o -d -r -a -J), plus
// tern's: -A/--algo (force an algorithm), -Z/--compress (codec), -I (per-iteration min/max/p99), -t (rank
// threads in this process).
#pragma once

#include <string>
#include <vector>

#include "tern/tern.h"

namespace tern::perf {

struct PerfOptions {
  size_t minBytes = 32 * 1024 * 1024;
  size_t maxBytes = 32 * 1024 * 1024;
  double stepFactor = 1.0;
  size_t stepBytes = 1024 * 1024;
  bool useFactor = false;
  int iters = 20;
  int warmup = 1;
  int check = 1;
  std::vector<ternRedOp_t> ops{ternSum};
  std::string opName = "sum";
  ternDataType_t dtype = ternFloat32;
  int root = 0;
  int average = 1;  // 0 rank 0, 1 avg, 2 min, 3 max
  std::string jsonFile;
  std::string algo;
  std::string compress;
  bool iterStats = false;
  bool registered = false;  // -R: buffers from ternMemAlloc (zero-copy between same-host ranks)
  size_t bufferOffset = 0;  // --buffer-offset: buffers start this many bytes past an aligned allocation
  int threads = 1;
};

// Parses argv; prints help/errors and exits (0 for -h, 2 for bad usage).
PerfOptions parsePerfOptions(int argc, char** argv, const char* binaryName, bool hasOp, bool hasRoot);

size_t parseSize(const std::string& text);  // "8", "1K", "64M", "1G" (powers of 1024, as nccl-tests)
const char* typeName(ternDataType_t t);
const char* opName(ternRedOp_t op);
size_t typeSize(ternDataType_t t);

}  // namespace tern::perf
