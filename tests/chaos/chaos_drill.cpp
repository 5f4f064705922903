// The chaos drill's rank program: a loop of random collectives (which collective, size, datatype, op, root, codec
// drawn from a seed every rank shares, so every rank makes the same call), each result checked against the
// independent reference (tests/common/reference.hpp). It runs until told to stop, until it fails, or forever when
// a drill script kills one of its peers; on an error it prints its rank, the error and the time since the fault
// (the epoch time the script wrote to CHAOS_FAULT_FILE), and exits 2.
//
//   chaos_drill [--seed S] [--seconds T] [--max-count N] [--codecs 0|1] [--first I]
//
// --first I starts at call I of the seed's sequence: replays a failure the drill or the soak reported.
//
// --codecs 1 (the default) adds compressed collectives: fp16/bf16 (exact on small integers) and lossy allreduces
// (sign, QSGD, Top-K; CHAOS_LOSSY_CODECS narrows the list), checked as the perf binaries check them
// (perf/common/compressed_bounds.hpp).
//
// Ranks start from the launcher environment (ternCommInitFromEnv). CHAOS_READY_DIR: each rank creates
// ready.RANK there once its communicator is up (the script injects faults only after every rank is ready).
// Exit status: 0 done (T seconds of calls, agreed by all ranks), 2 a tern call failed, 3 a wrong result, 1 usage.
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/reference.hpp"
#include "compressed_bounds.hpp"
#include "tern/tern.h"

namespace {

using tern::ref::elementSize;
using tern::ref::load;
using tern::ref::store;

int gRank = -1;
long gIteration = -1;
std::string gWhat = "init";

double epochNow() {
  timeval tv{};
  gettimeofday(&tv, nullptr);
  return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6;
}

// The seconds since the fault the drill script injected, or a negative value when there was none (yet).
double secondsSinceFault(double now) {
  const char* file = std::getenv("CHAOS_FAULT_FILE");
  if (file == nullptr) return -1;
  std::ifstream in(file);
  double at = 0;
  if (!(in >> at)) return -1;
  return now - at;
}

[[noreturn]] void failed(ternResult_t r, ternComm_t comm) {
  const double now = epochNow();
  const double since = secondsSinceFault(now);
  char when[64] = "no fault injected";
  if (since >= 0) std::snprintf(when, sizeof(when), "%.3f s after the fault", since);
  std::printf("rank %d: error at %.3f (%s) in iteration %ld (%s): %s: %s\n", gRank, now, when, gIteration,
              gWhat.c_str(), ternGetErrorString(r), ternGetLastError(comm));
  std::fflush(stdout);
  // Abort rather than destroy: the peers are gone, and a destroy would only wait for them.
  if (comm != nullptr) ternCommAbort(comm);
  std::_Exit(2);
}

#define CHECK(call)                          \
  do {                                       \
    ternResult_t r_ = (call);                \
    if (r_ != ternSuccess) failed(r_, comm); \
  } while (0)

[[noreturn]] void wrong(const char* what, size_t index, double got, double want) {
  std::printf("rank %d: WRONG RESULT in iteration %ld (%s): %s element %zu is %.17g, expected %.17g\n", gRank,
              gIteration, gWhat.c_str(), what, index, got, want);
  std::fflush(stdout);
  std::_Exit(3);
}

void expectEqual(const std::vector<char>& got, const std::vector<char>& want, size_t count, ternDataType_t t,
                 const char* what) {
  if (std::memcmp(got.data(), want.data(), count * elementSize(t)) == 0) return;
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(got.data() + i * elementSize(t), want.data() + i * elementSize(t), elementSize(t)) != 0) {
      wrong(what, i, load(got.data(), i, t), load(want.data(), i, t));
    }
  }
}

const char* typeName(ternDataType_t t) {
  static const char* names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "fp16", "fp32", "fp64", "bf16"};
  return names[t];
}

const char* opName(ternRedOp_t op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return names[op];
}

enum Kind {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAlltoAll,
  kSendRecv,
  kBarrier,
  kCompressed,  // fp16/bf16 codecs: exact on the check data
  kLossy        // sign, QSGD, Top-K allreduce: the mean of K calls within the codec's bound
};

struct Call {
  Kind kind;
  size_t count;
  ternDataType_t dtype;
  ternRedOp_t op;
  int root;
  int compressedColl;  // kCompressed: 0 allreduce, 1 allgather, 2 reduce-scatter
  const char* codec;
  long salt;  // varies the data from call to call
};

// The lossy codecs the drill draws from: CHAOS_LOSSY_CODECS (comma-separated specs), else all of them.
const std::vector<std::string>& lossyCodecs() {
  static const std::vector<std::string> codecs = [] {
    std::vector<std::string> list;
    const char* env = std::getenv("CHAOS_LOSSY_CODECS");
    std::string spec = env != nullptr && *env != '\0' ? env : "sign,sign:rms,qsgd:4,qsgd:8,topk:0.01,topk:0.05:exact";
    size_t start = 0;
    while (start <= spec.size()) {
      const size_t comma = std::min(spec.find(',', start), spec.size());
      if (comma > start) list.push_back(spec.substr(start, comma - start));
      start = comma + 1;
    }
    return list;
  }();
  return codecs;
}

// Everything about call i, from the shared seed only: every rank draws the same call.
Call drawCall(uint64_t seed, long i, int nranks, size_t maxCount, bool codecs) {
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(i));
  Call c{};
  c.kind = static_cast<Kind>(rng() % (codecs ? 10 : 8));
  const int maxExponent = static_cast<int>(std::log2(static_cast<double>(maxCount)));
  const int e = static_cast<int>(rng() % static_cast<uint64_t>(maxExponent + 1));
  c.count = (size_t{1} << e) + rng() % (size_t{1} << e);
  if (c.count > maxCount) c.count = maxCount;
  c.dtype = static_cast<ternDataType_t>(rng() % ternNumTypes);
  c.op = static_cast<ternRedOp_t>(rng() % ternNumOps);
  c.root = static_cast<int>(rng() % static_cast<uint64_t>(nranks));
  c.salt = static_cast<long>(rng() % 1000);
  if (c.kind == kCompressed) {
    static const char* kCodecs[] = {"fp16", "bf16"};
    c.codec = kCodecs[rng() % 2];
    c.compressedColl = static_cast<int>(rng() % 3);
    c.dtype = (rng() % 2) ? ternFloat32 : ternBfloat16;
    c.op = (rng() % 2) ? ternSum : ternAvg;
  }
  if (c.kind == kLossy) {
    const std::vector<std::string>& codecs = lossyCodecs();
    c.codec = codecs[rng() % codecs.size()].c_str();
    c.dtype = ternFloat32;
    c.op = (rng() % 2) ? ternSum : ternAvg;
    // K calls of it, at least 128 elements per rank's chunk. The sign bound (server residual <= 2 max|S|,
    // docs/COMPRESSION.md) is a factor measured on chunks of 10^2-10^6 elements, not a proof, and shorter chunks
    // have larger residuals by the codec's own contract (one mean-|v| scale per chunk, error feedback): on 24
    // elements over 4 ranks (chunks of 6) the residual reaches 2.5 max|S|, and a double-precision model of that
    // contract gives the same error at the same element, so the codec is right and the bound does not hold there.
    // What the contract proves for a chunk of m elements, |r| <= ||r||_2 <= q/(1-q) ||S||_2 with q = sqrt(1-1/m)
    // (the scaled sign is a contraction: ||v - C(v)||^2 = ||v||^2 - ||v||_1^2/m), would need hundreds of calls per
    // check on such chunks; the drill stays where the measured factor applies.
    c.count = std::clamp<size_t>(c.count, 128 * static_cast<size_t>(nranks), size_t{1} << 18);
  }
  return c;
}

// Rank r's element j: small integers, so every sum and product of four ranks is exact in every datatype (fp16 and
// bf16 included) and the compressed codecs fp16/bf16 are exact too; never negative for unsigned types.
double valueOf(const Call& c, int r, size_t j) {
  const bool isUnsigned = c.dtype == ternUint8 || c.dtype == ternUint32 || c.dtype == ternUint64;
  if (c.op == ternProd && c.kind != kCompressed) {
    const uint64_t h = (j * 2654435761u + static_cast<uint64_t>(r) * 40503u + static_cast<uint64_t>(c.salt)) % 3;
    if (h == 0) return 2;
    return (h == 1 || isUnsigned) ? 1 : -1;
  }
  const long v = static_cast<long>((j * 7 + static_cast<size_t>(r) * 3 + static_cast<size_t>(c.salt)) % 9) - 4;
  return isUnsigned ? static_cast<double>(std::labs(v)) : static_cast<double>(v);
}

std::vector<char> buffer(const Call& c, int r, size_t count, size_t offset = 0) {
  return tern::ref::makeBuffer(count, c.dtype, [&](size_t j) { return valueOf(c, r, offset + j); });
}

std::string describe(const Call& c) {
  static const char* kinds[] = {"allreduce", "allgather", "reducescatter", "broadcast",  "reduce",
                                "alltoall",  "sendrecv",  "barrier",       "compressed", "lossy"};
  static const char* compressed[] = {"allreduce", "allgather", "reducescatter"};
  char s[160];
  if (c.kind == kLossy) {
    std::snprintf(s, sizeof(s), "compressed allreduce %s count %zu fp32 %s", c.codec, c.count, opName(c.op));
  } else if (c.kind == kCompressed) {
    std::snprintf(s, sizeof(s), "compressed %s %s count %zu %s %s", compressed[c.compressedColl], c.codec, c.count,
                  typeName(c.dtype), opName(c.op));
  } else {
    std::snprintf(s, sizeof(s), "%s count %zu %s %s root %d", kinds[c.kind], c.count, typeName(c.dtype), opName(c.op),
                  c.root);
  }
  return s;
}

// A lossy codec's allreduce, checked as the perf binaries' -c 1 check does (perf/common/compressed_bounds.hpp): K
// calls on the codec's check data with a fresh compressor, the mean of the K results within the codec's bound of
// the true (double, rank-order) sum, and the same bits on every rank.
void runLossy(const Call& c, ternComm_t comm, int rank, int n) {
  namespace cc = tern::compressed_check;
  const cc::Codec codec = cc::parseCodec(c.codec);
  const size_t count = c.count;
  const int calls = cc::checkCalls(codec, n);
  cc::Shape shape;
  shape.ranks = n;
  shape.average = c.op == ternAvg;
  shape.serverStage = codec.family != cc::Family::kTopK;  // two-phase allreduce for dense codecs
  shape.dtype = ternFloat32;
  cc::Magnitudes mag;
  mag.maxAbsInput.assign(n, 0.0);
  for (size_t j = 0; j < count; ++j) {
    double sum = 0;
    for (int p = 0; p < n; ++p) {
      const double x = cc::checkValue(codec, p, n, j);
      mag.maxAbsInput[p] = std::max(mag.maxAbsInput[p], std::fabs(x));
      sum += x;
    }
    mag.maxAbsSum = std::max(mag.maxAbsSum, std::fabs(sum));
  }
  std::vector<float> in(count), out(count);
  for (size_t j = 0; j < count; ++j) in[j] = static_cast<float>(cc::checkValue(codec, rank, n, j));
  ternCompressor_t compressor = nullptr;
  CHECK(ternCompressorCreate(c.codec, nullptr, count, ternFloat32, &compressor));
  // The default seed, as the perf check runs: the Top-K bound's residual factor was measured there. CHAOS_LOSSY_SEEDS=1
  // draws a seed per call instead, which finds sampled Top-K calls whose mean misses the bound (see the report of
  // issue 17: seed 3, iteration 292 of the soak).
  if (const char* v = std::getenv("CHAOS_LOSSY_SEEDS"); v != nullptr && std::strcmp(v, "1") == 0) {
    CHECK(ternCompressorSetSeed(compressor, 1000 + static_cast<uint64_t>(c.salt)));
  }
  std::vector<double> mean(count, 0.0);
  uint64_t hash = 1469598103934665603ull;
  for (int k = 0; k < calls; ++k) {
    CHECK(ternAllReduceCompressed(in.data(), out.data(), count, ternFloat32, c.op, compressor, comm));
    for (size_t j = 0; j < count; ++j) {
      mean[j] += out[j];
      uint32_t bits;
      std::memcpy(&bits, &out[j], sizeof(bits));
      hash = (hash ^ bits) * 1099511628211ull;
    }
  }
  ternCompressorDestroy(compressor);
  std::vector<double> xs(n);
  for (size_t j = 0; j < count; ++j) {
    double want = 0;
    for (int p = 0; p < n; ++p) want += (xs[p] = cc::checkValue(codec, p, n, j));
    if (shape.average) want /= n;
    const double got = mean[j] / calls;
    const double tol = cc::elementTolerance(codec, shape, mag, xs.data(), n, calls);
    if (!std::isfinite(got) || std::fabs(got - want) > tol) wrong("mean of the compressed allreduce", j, got, want);
  }
  // Every rank decoded the same bytes: the same result bits everywhere.
  const double h = static_cast<double>(hash >> 11);  // exact in a double
  double mx = 0, mn = 0;
  CHECK(ternAllReduce(&h, &mx, 1, ternFloat64, ternMax, comm));
  CHECK(ternAllReduce(&h, &mn, 1, ternFloat64, ternMin, comm));
  if (mx != mn) wrong("result bits differ between ranks; hash", 0, mx, mn);
}

void runCall(const Call& c, ternComm_t comm, int rank, int n) {
  const ternDataType_t t = c.dtype;
  const size_t es = elementSize(t);
  const size_t count = c.count;
  auto reduced = [&](size_t cnt, size_t offset, ternRedOp_t op) {
    return tern::ref::reduceBuffer(n, cnt, offset, t, op, [&](int r, size_t j) { return valueOf(c, r, j); });
  };
  switch (c.kind) {
    case kAllReduce: {
      auto in = buffer(c, rank, count);
      std::vector<char> out(count * es);
      CHECK(ternAllReduce(in.data(), out.data(), count, t, c.op, comm));
      expectEqual(out, reduced(count, 0, c.op), count, t, "allreduce");
      break;
    }
    case kAllGather: {
      auto in = buffer(c, rank, count);
      std::vector<char> out(count * es * n);
      CHECK(ternAllGather(in.data(), out.data(), count, t, comm));
      std::vector<char> want(out.size());
      for (int r = 0; r < n; ++r) {
        auto b = buffer(c, r, count);
        std::memcpy(want.data() + r * count * es, b.data(), b.size());
      }
      expectEqual(out, want, count * n, t, "allgather");
      break;
    }
    case kReduceScatter: {
      auto in = buffer(c, rank, count * n);
      std::vector<char> out(count * es);
      CHECK(ternReduceScatter(in.data(), out.data(), count, t, c.op, comm));
      expectEqual(out, reduced(count, rank * count, c.op), count, t, "reducescatter");
      break;
    }
    case kBroadcast: {
      auto in = buffer(c, rank, count);
      std::vector<char> out(count * es);
      CHECK(ternBroadcast(in.data(), out.data(), count, t, c.root, comm));
      expectEqual(out, buffer(c, c.root, count), count, t, "broadcast");
      break;
    }
    case kReduce: {
      auto in = buffer(c, rank, count);
      std::vector<char> out(count * es);
      CHECK(ternReduce(in.data(), out.data(), count, t, c.op, c.root, comm));
      if (rank == c.root) expectEqual(out, reduced(count, 0, c.op), count, t, "reduce");
      break;
    }
    case kAlltoAll: {
      auto in = buffer(c, rank, count * n);
      std::vector<char> out(count * es * n);
      CHECK(ternAlltoAll(in.data(), out.data(), count, t, comm));
      std::vector<char> want(out.size());
      for (int r = 0; r < n; ++r) {
        auto b = buffer(c, r, count, rank * count);
        std::memcpy(want.data() + r * count * es, b.data(), b.size());
      }
      expectEqual(out, want, count * n, t, "alltoall");
      break;
    }
    case kSendRecv: {
      auto in = buffer(c, rank, count);
      std::vector<char> out(count * es);
      const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
      CHECK(ternGroupStart());
      CHECK(ternSend(in.data(), count, t, next, comm));
      CHECK(ternRecv(out.data(), count, t, prev, comm));
      CHECK(ternGroupEnd());
      expectEqual(out, buffer(c, prev, count), count, t, "sendrecv");
      break;
    }
    case kBarrier:
      CHECK(ternBarrier(comm));
      break;
    case kCompressed: {
      // fp16/bf16 codecs on small integers are exact (tests/common/reference.hpp's data; perf/common's bounds are 0).
      const size_t total = c.compressedColl == 2 ? count * n : count;
      ternCompressor_t compressor = nullptr;
      CHECK(ternCompressorCreate(c.codec, nullptr, total, t, &compressor));
      auto in = buffer(c, rank, total);
      if (c.compressedColl == 0) {
        std::vector<char> out(count * es);
        CHECK(ternAllReduceCompressed(in.data(), out.data(), count, t, c.op, compressor, comm));
        expectEqual(out, reduced(count, 0, c.op), count, t, "compressed allreduce");
      } else if (c.compressedColl == 1) {
        std::vector<char> out(count * es * n);
        CHECK(ternAllGatherCompressed(in.data(), out.data(), count, t, compressor, comm));
        std::vector<char> want(out.size());
        for (int r = 0; r < n; ++r) {
          auto b = buffer(c, r, count);
          std::memcpy(want.data() + r * count * es, b.data(), b.size());
        }
        expectEqual(out, want, count * n, t, "compressed allgather");
      } else {
        std::vector<char> out(count * es);
        CHECK(ternReduceScatterCompressed(in.data(), out.data(), count, t, c.op, compressor, comm));
        expectEqual(out, reduced(count, rank * count, c.op), count, t, "compressed reducescatter");
      }
      ternCompressorDestroy(compressor);
      break;
    }
    case kLossy:
      runLossy(c, comm, rank, n);
      break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t seed = 1;
  double seconds = 60;
  size_t maxCount = 1 << 16;
  bool codecs = true;
  long first = 0;  // replays a run from this call on (the calls depend only on the seed and their index)
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--seed") {
      seed = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (a == "--seconds") {
      seconds = std::atof(argv[i + 1]);
    } else if (a == "--max-count") {
      maxCount = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (a == "--first") {
      first = std::strtol(argv[i + 1], nullptr, 10);
    } else if (a == "--codecs") {
      codecs = std::atoi(argv[i + 1]) != 0;
    } else {
      std::fprintf(stderr, "usage: %s [--seed S] [--seconds T] [--max-count N] [--codecs 0|1] [--first I]\n", argv[0]);
      return 1;
    }
  }
  if (maxCount < 1) maxCount = 1;
  ternComm_t comm = nullptr;
  CHECK(ternCommInitFromEnv(&comm, nullptr));
  int rank = 0, n = 0;
  CHECK(ternCommUserRank(comm, &rank));
  CHECK(ternCommCount(comm, &n));
  gRank = rank;
  if (const char* dir = std::getenv("CHAOS_READY_DIR")) {
    std::ofstream(std::string(dir) + "/ready." + std::to_string(rank)) << epochNow() << "\n";
  }
  std::printf("rank %d of %d ready (seed %llu)\n", rank, n, static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  const auto start = std::chrono::steady_clock::now();
  long calls = 0;
  for (long i = first;; ++i) {
    gIteration = i;
    if (i % 32 == 31) {
      // When to stop is agreed, not decided by each rank's clock: the ranks must make the same calls.
      gWhat = "stop vote";
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      int32_t stop = elapsed >= seconds ? 1 : 0, anyStop = 0;
      CHECK(ternAllReduce(&stop, &anyStop, 1, ternInt32, ternMax, comm));
      if (anyStop != 0) break;
      continue;
    }
    const Call c = drawCall(seed, i, n, maxCount, codecs);
    gWhat = describe(c);
    runCall(c, comm, rank, n);
    ++calls;
  }
  std::printf("rank %d: done, %ld calls checked\n", rank, calls);
  std::fflush(stdout);
  CHECK(ternCommDestroy(comm));
  return 0;
}
