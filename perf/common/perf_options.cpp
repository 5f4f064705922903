#include "perf_options.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace tern::perf {

size_t parseSize(const std::string& text) {
  if (text.empty()) throw CLI::ValidationError("size", "empty size");
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  double mult = 1;
  std::string suffix(end);
  if (suffix == "K" || suffix == "k" || suffix == "KB" || suffix == "KiB")
    mult = 1024.0;
  else if (suffix == "M" || suffix == "m" || suffix == "MB" || suffix == "MiB")
    mult = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g" || suffix == "GB" || suffix == "GiB")
    mult = 1024.0 * 1024 * 1024;
  else if (!suffix.empty() && suffix != "B")
    throw CLI::ValidationError("size", "bad size '" + text + "'");
  if (v < 0) throw CLI::ValidationError("size", "negative size '" + text + "'");
  return static_cast<size_t>(v * mult);
}

const char* typeName(ternDataType_t t) {
  static const char* names[] = {"int8",   "uint8", "int32", "uint32", "int64",
                                "uint64", "half",  "float", "double", "bfloat16"};
  return (t >= 0 && t < ternNumTypes) ? names[t] : "?";
}

const char* opName(ternRedOp_t op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return (op >= 0 && op < ternNumOps) ? names[op] : "?";
}

size_t typeSize(ternDataType_t t) {
  static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
  return (t >= 0 && t < ternNumTypes) ? sizes[t] : 0;
}

PerfOptions parsePerfOptions(int argc, char** argv, const char* binaryName, bool hasOp, bool hasRoot) {
  PerfOptions o;
  CLI::App app{std::string(binaryName) + ": tern collective benchmark (nccl-tests flags and output)"};
  std::string minB = "32M", maxB = "32M", stepB, factor, dtype = "float", op = "sum";
  app.add_option("-b,--minbytes", minB, "minimum size in bytes (K/M/G suffixes)");
  app.add_option("-e,--maxbytes", maxB, "maximum size in bytes");
  app.add_option("-i,--stepbytes", stepB, "increment between sizes (default 1M)");
  app.add_option("-f,--stepfactor", factor, "multiplication factor between sizes");
  app.add_option("-n,--iters", o.iters, "timed iterations per size")->check(CLI::PositiveNumber);
  app.add_option("-w,--warmup_iters", o.warmup, "warmup iterations per size")->check(CLI::NonNegativeNumber);
  app.add_option("-c,--check", o.check, "check correctness (0/1)");
  if (hasOp) app.add_option("-o,--op", op, "reduction op: sum, prod, min, max, avg or all");
  app.add_option("-d,--datatype", dtype,
                 "datatype: int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16");
  if (hasRoot) app.add_option("-r,--root", o.root, "root rank");
  app.add_option("-a,--average", o.average, "time reported: 0 rank 0, 1 average, 2 min, 3 max across ranks");
  app.add_option("-J,--output_file", o.jsonFile, "write results as JSON to this file");
  app.add_option("-A,--algo", o.algo, "force an algorithm by name (as TERN_ALGO)");
  app.add_option("-Z,--compress", o.compress, "compress with CODEC[:param] (sign, qsgd:4, topk:0.01, fp16, bf16)");
  app.add_flag("-I,--iter-stats", o.iterStats, "report per-iteration min/max/p99 times");
  app.add_flag("-R,--registered", o.registered,
               "allocate buffers with ternMemAlloc (peers on this host read them in place)");
  app.add_option("--buffer-offset", o.bufferOffset,
                 "start every buffer this many bytes past its aligned allocation (16: where malloc puts large blocks)")
      ->check(CLI::Range(0, 4095));
  app.add_option("-t,--nthreads", o.threads, "ranks as threads of this process (when not started by a launcher)")
      ->check(CLI::PositiveNumber);
  int ignored = 1;
  app.add_option("-g,--ngpus", ignored, "accepted for nccl-tests compatibility (ignored)");
  try {
    app.parse(argc, argv);
    o.minBytes = parseSize(minB);
    o.maxBytes = parseSize(maxB);
    if (!stepB.empty()) o.stepBytes = parseSize(stepB);
    if (!factor.empty()) {
      o.stepFactor = std::stod(factor);
      o.useFactor = true;
      if (o.stepFactor <= 1.0) throw CLI::ValidationError("-f", "step factor must be > 1");
    }
    if (o.maxBytes < o.minBytes) throw CLI::ValidationError("-e", "maxbytes < minbytes");
    static const std::map<std::string, ternDataType_t> types = {
        {"int8", ternInt8},       {"uint8", ternUint8},     {"int32", ternInt32},       {"int", ternInt32},
        {"uint32", ternUint32},   {"int64", ternInt64},     {"uint64", ternUint64},     {"half", ternFloat16},
        {"float16", ternFloat16}, {"fp16", ternFloat16},    {"float", ternFloat32},     {"float32", ternFloat32},
        {"double", ternFloat64},  {"float64", ternFloat64}, {"bfloat16", ternBfloat16}, {"bf16", ternBfloat16}};
    auto t = types.find(dtype);
    if (t == types.end()) throw CLI::ValidationError("-d", "unknown datatype '" + dtype + "'");
    o.dtype = t->second;
    static const std::map<std::string, ternRedOp_t> ops = {
        {"sum", ternSum}, {"prod", ternProd}, {"max", ternMax}, {"min", ternMin}, {"avg", ternAvg}};
    o.opName = op;
    if (op == "all") {
      o.ops = {ternSum, ternProd, ternMax, ternMin, ternAvg};
    } else {
      auto it = ops.find(op);
      if (it == ops.end()) throw CLI::ValidationError("-o", "unknown op '" + op + "'");
      o.ops = {it->second};
    }
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e) == 0 ? 0 : 2);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", binaryName, e.what());
    std::exit(2);
  }
  return o;
}

}  // namespace tern::perf
