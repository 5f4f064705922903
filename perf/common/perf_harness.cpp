#include "perf_harness.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "../compare/driver_common.hpp"  // the time column, as the baseline drivers print it
#include "common/reference.hpp"          // tests/common: the independent reference of the -c 1 check
#include "compressed_bounds.hpp"
#include "host_buffer.hpp"
#include "tern/tern_ext.h"

namespace tern::perf {

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const char* what, ternResult_t r, ternComm_t comm) {
  std::fprintf(stderr, "tern perf: %s failed: %s (%s)\n", what, ternGetErrorString(r), ternGetLastError(comm));
  std::fflush(stderr);
  std::_Exit(1);
}

#define PERF_CHECK(call, comm)                   \
  do {                                           \
    ternResult_t r_ = (call);                    \
    if (r_ != ternSuccess) die(#call, r_, comm); \
  } while (0)

// A benchmark buffer: ordinary heap memory allocated as the baseline drivers allocate theirs (host_buffer.hpp), or (-R)
// ternMemAlloc memory that same-host peers map, so the intra-node collectives read it in place instead of staging it
// through shared memory.
struct Buffer {
  char* p = nullptr;  // the allocation
  size_t offset = 0;  // where the buffer starts in it (--buffer-offset)
  size_t bytes = 0;
  bool registered = false;
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { release(); }
  char* get() const { return p + offset; }
  void release() {
    if (p == nullptr) return;
    if (registered) {
      ternMemFree(p);
    } else {
      std::free(p);
    }
    p = nullptr;
    bytes = 0;
  }
  void ensure(size_t b, bool useTernMem, size_t startOffset) {
    if (b <= bytes && useTernMem == registered && startOffset == offset) return;
    release();
    offset = startOffset;
    size_t rounded = (std::max<size_t>(b, 64) + startOffset + 4095) & ~static_cast<size_t>(4095);
    registered = useTernMem;
    if (registered) {
      void* q = nullptr;
      if (ternMemAlloc(&q, rounded) != ternSuccess) {
        std::fprintf(stderr, "perf: ternMemAlloc of %zu bytes failed: %s\n", rounded, ternGetLastError(nullptr));
        std::exit(1);
      }
      p = static_cast<char*>(q);
      std::memset(p, 0, rounded);  // touch every page before timing
    } else {
      p = allocateHostBuffer(rounded).release();  // as the baseline drivers allocate (host_buffer.hpp)
    }
    bytes = rounded - startOffset;
  }
};

struct Measured {
  double timeUs = 0, algbw = 0, busbw = 0, minUs = 0, maxUs = 0, p99Us = 0;
  long long wrong = 0;
  std::string algorithm;  // what ran the timed calls (ternCommLastAlgorithm)
};

// ---- The uncompressed check (-c 1) of one call ----
//
// Inputs: rank r's send element k is input(r, k), an integer from a hash of (r, k) that the datatype and a double
// hold exactly, in a range chosen per op (see the constructor) so that the result does not depend on the order in
// which the library combines the ranks.
//
// Expected bits: tests/common/reference.hpp, which shares no code with the library (its own fp16/bf16
// round-to-nearest-even, reductions in double / 64-bit integers in rank order, rounded once to the datatype).
// Every element is compared bit for bit, float avg included. The bound for avg is |sum error| / n plus the
// difference between the library's and the reference's division roundings. On this data the sum's error is 0:
// every partial sum, of any subset of ranks in any order, is an integer within the datatype's exact range, so no
// accumulator (the datatype itself or fp32/fp64) rounds it. Both then divide that exact sum once, in fp32 (fp64
// for double), and round once to nearest even into the datatype (tern.h documents avg so): the same correctly
// rounded operation, so the bound is 0.
//
// Coverage: the whole receive buffer plus kGuardElems past its end and, out of place, the whole send buffer plus
// its guard. Elements the collective must write start as the bitwise complement of their expected bits, so a
// skipped element cannot pass; elements it must leave alone (past the output, reduce's receive buffer off the
// root, reduce-scatter's tail, sendrecv's other half, the send buffer) start as kSentinel or, in place, as this
// rank's own input, and must still hold exactly that.
class UncompressedCheck {
 public:
  static constexpr size_t kGuardElems = 16;  // the buffers are allocated this much longer
  static constexpr unsigned char kSentinel = 0xa5;

  UncompressedCheck(const CollectiveSpec& spec, ternDataType_t t, ternRedOp_t op, int nranks, int rank, int root,
                    const Layout& l, bool inPlace)
      : spec_(spec), t_(t), op_(op), n_(nranks), rank_(rank), root_(root), l_(l), inPlace_(inPlace), e_(typeSize(t)) {
    const bool reduces = spec.hasOp;
    const double limit = exactIntegerLimit(t);
    // 8- and 32-bit integer sums and products wrap in the datatype, which the reference computes exactly for any
    // inputs, so these use the full range (wrapping included); 64-bit integers and floats keep every partial
    // result inside the exact range.
    const bool wraps = !ref::isFloating(t) && ref::elementSize(t) <= 4;
    // Factors up to 3 from the first `threes` ranks (3^threes <= limit), +-1 from the others: every partial
    // product is exact.
    int threes = 0;
    for (double p = 3; p <= limit; p *= 3) ++threes;
    for (int r = 0; r < n_; ++r) {
      double m = limit;  // nothing accumulates: movement, max, min
      if (reduces && !wraps && op == ternProd) m = r < threes ? 3 : 1;
      if (reduces && !wraps && (op == ternSum || op == ternAvg)) m = std::floor(limit / n_);  // |sum| <= limit
      range_.push_back(static_cast<uint64_t>(m));
    }
    // Signed zeros for float max/min: the library orders -0 below +0 (reference.hpp), which equal-comparing code
    // would not.
    signedZeros_ = reduces && ref::isFloating(t) && (op == ternMax || op == ternMin);
    noZeros_ = reduces && op == ternProd;  // a zero factor would hide the others
    values_.resize(static_cast<size_t>(n_));
  }

  // Rank `rank`'s send element k: an integer in [-m, m] ([0, m] unsigned), m = range_[rank].
  double input(int rank, size_t k) const {
    uint64_t h = mix(k * static_cast<uint64_t>(n_) + static_cast<uint64_t>(rank));
    if (signedZeros_ && (h & 7) == 0) return (h & 8) ? -0.0 : 0.0;
    const uint64_t m = range_[static_cast<size_t>(rank)];
    double v = ref::isSigned(t_) ? static_cast<double>(below(h, 2 * m + 1)) - static_cast<double>(m)
                                 : static_cast<double>(below(h, m + 1));
    if (v == 0 && noZeros_) v = 1;
    return v;
  }

  void storeInputs(void* dst) const {
    for (size_t k = 0; k < l_.sendElems; ++k) ref::store(dst, k, t_, input(rank_, k));
  }

  void prepare(void* send, void* recv) {
    char* r = static_cast<char*>(recv);
    for (size_t j = 0; j < l_.recvElems + kGuardElems; ++j) {
      const Expected want = expectation(j);
      if (want.kind != Expected::kUnchanged && !holdsInput(j)) {
        expectedBits(j, want, r + j * e_);
        for (size_t b = 0; b < e_; ++b) r[j * e_ + b] = static_cast<char>(~r[j * e_ + b]);
      } else {
        initialBits(j, r + j * e_);
      }
    }
    if (!inPlace_) {
      storeInputs(send);
      std::memset(static_cast<char*>(send) + l_.sendElems * e_, kSentinel, kGuardElems * e_);
    }
  }

  long long countWrong(const void* send, const void* recv) {
    const char* r = static_cast<const char*>(recv);
    char want[8];
    long long wrong = 0;
    for (size_t j = 0; j < l_.recvElems + kGuardElems; ++j) {
      expectedBits(j, expectation(j), want);
      if (!sameBits(want, r + j * e_)) ++wrong;
    }
    if (!inPlace_) {  // the send buffer is const: every element and the guard past it as they were
      const char* s = static_cast<const char*>(send);
      for (size_t k = 0; k < l_.sendElems + kGuardElems; ++k) {
        if (k < l_.sendElems) {
          ref::store(want, 0, t_, input(rank_, k));
        } else {
          std::memset(want, kSentinel, e_);
        }
        if (!sameBits(want, s + k * e_)) ++wrong;
      }
    }
    return wrong;
  }

 private:
  // The largest L such that every integer in [-L, L] ([0, L] unsigned) is a value of t that a double holds.
  static double exactIntegerLimit(ternDataType_t t) {
    switch (t) {
      case ternInt8:
        return 127;
      case ternUint8:
        return 255;
      case ternInt32:
        return 2147483647.0;
      case ternUint32:
        return 4294967295.0;
      case ternFloat16:
        return 2048;  // 11 significant bits
      case ternBfloat16:
        return 256;  // 8 significant bits
      case ternFloat32:
        return 16777216.0;
      default:
        return 9007199254740992.0;  // 2^53: doubles, and 64-bit integers as reference.hpp reads them
    }
  }

  static uint64_t mix(uint64_t x) {  // splitmix64's finalizer
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }

  // h scaled into [0, bound) (a multiply instead of a 64-bit division: the check runs over every element).
  static uint64_t below(uint64_t h, uint64_t bound) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(h) * bound) >> 64);
  }

  bool sameBits(const char* a, const char* b) const {
    uint64_t x = 0, y = 0;
    std::memcpy(&x, a, e_);
    std::memcpy(&y, b, e_);
    return x == y;
  }

  Expected expectation(size_t j) const {
    const size_t from = inPlace_ ? l_.inPlaceRecvOffset : 0;  // receive element of output element 0
    return j >= from && j < l_.recvElems ? spec_.expected(j - from, rank_, n_, l_.callCount, root_)
                                         : Expected::unchanged();
  }

  // In place, receive elements [offset, offset + sendElems) are this rank's send data.
  bool holdsInput(size_t j) const {
    return inPlace_ && j >= l_.inPlaceSendOffset && j - l_.inPlaceSendOffset < l_.sendElems;
  }

  // The bits receive element j must hold after the call, into out (one element).
  void expectedBits(size_t j, const Expected& want, char* out) {
    switch (want.kind) {
      case Expected::kCopied:
        ref::store(out, 0, t_, input(want.source, want.index));
        return;
      case Expected::kReduced: {
        char one[8];
        for (int r = 0; r < n_; ++r) {  // each rank's element as its buffer holds it
          ref::store(one, 0, t_, input(r, want.index));
          values_[static_cast<size_t>(r)] = ref::load(one, 0, t_);
        }
        ref::store(out, 0, t_, ref::reduceValues(values_.data(), n_, t_, op_));
        return;
      }
      case Expected::kUnchanged:
        initialBits(j, out);
        return;
    }
  }

  // What an element the collective must not write holds before the call.
  void initialBits(size_t j, char* out) const {
    if (holdsInput(j)) {
      ref::store(out, 0, t_, input(rank_, j - l_.inPlaceSendOffset));
    } else {
      std::memset(out, kSentinel, e_);
    }
  }

  const CollectiveSpec& spec_;
  ternDataType_t t_;
  ternRedOp_t op_;
  int n_, rank_, root_;
  Layout l_;
  bool inPlace_;
  size_t e_;
  std::vector<uint64_t> range_;  // per rank: inputs lie in [-m, m]
  bool signedZeros_ = false, noZeros_ = false;
  std::vector<double> values_;  // one element's inputs, in rank order
};

class RankRunner {
 public:
  RankRunner(const CollectiveSpec& spec, const PerfOptions& o, ternComm_t comm) : spec_(spec), o_(o), comm_(comm) {
    PERF_CHECK(ternCommCount(comm, &n_), comm);
    PERF_CHECK(ternCommUserRank(comm, &rank_), comm);
  }

  // The send data of the timed calls: the check's inputs (the receive buffer zeroed, out of place).
  void fillForTiming(void* send, void* recv, const Layout& l, ternRedOp_t op, bool inPlace) {
    const size_t e = typeSize(o_.dtype);
    if (!inPlace) std::memset(recv, 0, l.recvElems * e);
    UncompressedCheck check(spec_, o_.dtype, op, n_, rank_, o_.root, l, inPlace);
    check.storeInputs(inPlace ? static_cast<char*>(recv) + l.inPlaceSendOffset * e : send);
  }

  // Whether -Z runs this call compressed: a collective with a compressed form, a float type the codecs take, and
  // (for reductions) sum or avg. Anything else runs, and is checked, exactly.
  bool compressedForm(ternRedOp_t op) const {
    if (o_.compress.empty()) return false;
    const std::string name = spec_.name;
    const bool floatType = o_.dtype == ternFloat32 || o_.dtype == ternFloat16 || o_.dtype == ternBfloat16;
    if (!floatType) return false;
    if (name == "allgather") return true;
    return (name == "allreduce" || name == "reducescatter") && (op == ternSum || op == ternAvg);
  }

  // A compressor with a zero error-feedback state, for the elements one call encodes on this rank.
  ternCompressor_t newCompressor(const Layout& l) {
    const size_t elements = std::string(spec_.name) == "reducescatter" ? l.callCount * n_ : l.callCount;
    ternCompressor_t c = nullptr;
    PERF_CHECK(ternCompressorCreate(o_.compress.c_str(), nullptr, elements, o_.dtype, &c), comm_);
    return c;
  }

  ternResult_t runCompressed(const void* send, void* recv, size_t count, ternRedOp_t op, ternCompressor_t c) {
    const std::string name = spec_.name;
    if (name == "allgather") return ternAllGatherCompressed(send, recv, count, o_.dtype, c, comm_);
    if (name == "reducescatter") return ternReduceScatterCompressed(send, recv, count, o_.dtype, op, c, comm_);
    return ternAllReduceCompressed(send, recv, count, o_.dtype, op, c, comm_);
  }

  // The -Z check (compressed_bounds.hpp): the collective runs K times on the check data of the codec, with a fresh
  // compressor so that the timed calls' residuals do not enter; every result element whose mean over the K calls
  // is off the true (double, rank-order) result by more than the codec's bound counts as wrong, and every element
  // does when the ranks' results differ (allreduce and allgather decode the same bytes everywhere).
  long long verifyCompressed(const void* send, void* recv, void* out, const Layout& l, ternRedOp_t op, bool inPlace) {
    namespace cc = compressed_check;
    const cc::Codec codec = cc::parseCodec(o_.compress);
    const std::string name = spec_.name;
    const bool gather = name == "allgather", scatter = name == "reducescatter";
    const size_t per = l.callCount;
    const int calls = cc::checkCalls(codec, n_);
    cc::Shape shape;
    shape.ranks = n_;
    shape.average = op == ternAvg;
    shape.serverStage = name == "allreduce" && codec.family != cc::Family::kTopK;
    shape.dtype = o_.dtype;
    // Rank p's input element j (its send buffer's index; an allgather block's own index).
    auto input = [&](int p, size_t j) { return cc::checkValue(codec, p, n_, j); };
    const size_t inputElems = gather ? per : scatter ? per * n_ : per;
    const size_t outputElems = gather ? per * n_ : per;
    cc::Magnitudes mag;
    std::vector<double> rankMax(n_, 0.0);
    for (int p = 0; p < n_; ++p) {
      for (size_t j = 0; j < inputElems; ++j) rankMax[p] = std::max(rankMax[p], std::fabs(input(p, j)));
    }
    // The contributions to output element j, in rank order.
    std::vector<double> xs(n_);
    auto contributions = [&](size_t j) {
      if (gather) {
        xs[0] = input(static_cast<int>(j / per), j % per);
        return 1;
      }
      for (int p = 0; p < n_; ++p) xs[p] = input(p, scatter ? static_cast<size_t>(rank_) * per + j : j);
      return n_;
    };
    if (gather) {
      mag.maxAbsInput = {*std::max_element(rankMax.begin(), rankMax.end())};
    } else {
      mag.maxAbsInput = rankMax;
    }
    for (size_t j = 0; j < (scatter ? per * n_ : outputElems); ++j) {
      double sum = 0;
      if (gather) {
        sum = input(static_cast<int>(j / per), j % per);
      } else {
        for (int p = 0; p < n_; ++p) sum += input(p, j);
      }
      mag.maxAbsSum = std::max(mag.maxAbsSum, std::fabs(sum));
    }
    const size_t e = typeSize(o_.dtype);
    void* in = inPlace ? static_cast<char*>(recv) + l.inPlaceSendOffset * e : const_cast<void*>(send);
    ternCompressor_t c = newCompressor(l);
    std::vector<double> mean(outputElems, 0.0);
    uint64_t hash = 1469598103934665603ull;
    for (int k = 0; k < calls; ++k) {
      if (k == 0 || inPlace) {  // in place, the previous call overwrote the input
        for (size_t j = 0; j < inputElems; ++j) ref::store(in, j, o_.dtype, input(rank_, j));
      }
      PERF_CHECK(runCompressed(send, out, per, op, c), comm_);
      for (size_t j = 0; j < outputElems; ++j) {
        const double v = ref::load(out, j, o_.dtype);
        mean[j] += v;
        uint64_t bits;
        std::memcpy(&bits, &v, sizeof(bits));
        hash = (hash ^ bits) * 1099511628211ull;
      }
    }
    ternCompressorDestroy(c);
    long long wrong = 0;
    for (size_t j = 0; j < outputElems; ++j) {
      const int count = contributions(j);
      double want = 0;
      for (int p = 0; p < count; ++p) want += xs[p];
      if (shape.average) want /= n_;
      const double got = mean[j] / calls;
      const double tol = cc::elementTolerance(codec, shape, mag, xs.data(), count, calls);
      if (!std::isfinite(got) || std::fabs(got - want) > tol) ++wrong;
    }
    if (!scatter) {                                      // reduce-scatter blocks differ by rank
      const double h = static_cast<double>(hash >> 11);  // exact in a double
      if (combine(h, ternMax) != combine(h, ternMin)) wrong = static_cast<long long>(outputElems);
    }
    return wrong;
  }

  double combine(double v, ternRedOp_t op) {
    double out = v;
    PERF_CHECK(ternAllReduce(&v, &out, 1, ternFloat64, op, comm_), comm_);
    return out;
  }

  Measured measure(size_t count, ternRedOp_t op, bool inPlace) {
    Layout l = spec_.layout(count, n_, rank_);
    size_t e = typeSize(o_.dtype);
    const size_t guard = UncompressedCheck::kGuardElems;  // the check's guard past each buffer
    sendBuf_.ensure((l.sendElems + guard) * e, o_.registered, o_.bufferOffset);
    recvBuf_.ensure((l.recvElems + guard) * e, o_.registered, o_.bufferOffset);
    void* recv = recvBuf_.get();
    const void* send = inPlace ? static_cast<char*>(recv) + l.inPlaceSendOffset * e : sendBuf_.get();
    void* out = inPlace ? static_cast<char*>(recv) + l.inPlaceRecvOffset * e : recv;  // the call's output
    Measured m;
    fillForTiming(sendBuf_.get(), recv, l, op, inPlace);
    // -Z: the collective runs through the compressed API with one compressor (error-feedback state) for the size,
    // so it always compresses (TERN_COMPRESS alone leaves the choice to the cost model, which declines on shared
    // memory, and covers allreduce only).
    const bool compressed = compressedForm(op) && l.callCount > 0;  // a compressor holds at least one element
    ternCompressor_t timedCompressor = compressed ? newCompressor(l) : nullptr;
    auto runOnce = [&] {
      return compressed ? runCompressed(send, out, l.callCount, op, timedCompressor)
                        : spec_.run(send, out, l.callCount, o_.dtype, op, o_.root, comm_);
    };
    for (int i = 0; i < o_.warmup; ++i) PERF_CHECK(runOnce(), comm_);
    // Sync as nccl-tests' BenchTime does, with one untimed call of the timed collective rather than a barrier: the
    // ranks then enter the timed loop as they leave one of its own calls, not skewed by another path's release.
    PERF_CHECK(runOnce(), comm_);
    std::vector<double> perIter;
    auto t0 = Clock::now();
    for (int i = 0; i < o_.iters; ++i) {
      // Per-iteration clock reads only with -I: at a few hundred nanoseconds per call they would be in the figure.
      const auto s = o_.iterStats ? Clock::now() : Clock::time_point{};
      PERF_CHECK(runOnce(), comm_);
      if (o_.iterStats) perIter.push_back(std::chrono::duration<double, std::micro>(Clock::now() - s).count());
    }
    double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / o_.iters;
    m.algorithm = lastAlgorithm();  // before the timing's own allreduces below replace it
    switch (o_.average) {
      case 0: {
        double v = rank_ == 0 ? us : 0;
        us = combine(v, ternSum);
        break;
      }
      case 2:
        us = combine(us, ternMin);
        break;
      case 3:
        us = combine(us, ternMax);
        break;
      default:
        us = combine(us, ternSum) / n_;
        break;
    }
    if (o_.iterStats && !perIter.empty()) {
      std::sort(perIter.begin(), perIter.end());
      m.minUs = combine(perIter.front(), ternMin);
      m.maxUs = combine(perIter.back(), ternMax);
      m.p99Us = combine(perIter[std::min(perIter.size() - 1, static_cast<size_t>(perIter.size() * 0.99))], ternMax);
    }
    size_t bytes = count * e;
    m.timeUs = us;
    m.algbw = us > 0 ? static_cast<double>(bytes) / 1e3 / us : 0;
    m.busbw = m.algbw * spec_.busFactor(n_);
    if (timedCompressor != nullptr) ternCompressorDestroy(timedCompressor);
    if (o_.check && compressed) {
      m.wrong = static_cast<long long>(
          combine(static_cast<double>(verifyCompressed(send, recv, out, l, op, inPlace)), ternSum));
    } else if (o_.check) {
      UncompressedCheck check(spec_, o_.dtype, op, n_, rank_, o_.root, l, inPlace);
      check.prepare(sendBuf_.get(), recv);
      PERF_CHECK(spec_.run(send, out, l.callCount, o_.dtype, op, o_.root, comm_), comm_);
      const long long mine = check.countWrong(sendBuf_.get(), recv);
      m.wrong = static_cast<long long>(combine(static_cast<double>(mine), ternSum));
    } else {
      m.wrong = -1;
    }
    return m;
  }

  int run() {
    nodes_ = countHosts();
    bool leader = rank_ == 0;
    nlohmann::json records = nlohmann::json::array();
    if (leader) printHeader();
    long long totalWrong = 0;
    double busSum = 0;
    int busCount = 0;
    // Buffers for the largest size up front, as nccl-tests allocates its device buffers (and the baseline drivers
    // theirs): a buffer allocated per size would be fresh memory at each size's first calls, and memory whose pages
    // were first touched a moment ago copies slower for a while on some virtual machines (the host backs it lazily),
    // which a short run would report as the library's.
    if (o_.minBytes <= o_.maxBytes) {
      const Layout largest = spec_.layout(spec_.roundCount(o_.maxBytes / typeSize(o_.dtype), n_), n_, rank_);
      const size_t e = typeSize(o_.dtype), guard = UncompressedCheck::kGuardElems;
      sendBuf_.ensure((largest.sendElems + guard) * e, o_.registered, o_.bufferOffset);
      recvBuf_.ensure((largest.recvElems + guard) * e, o_.registered, o_.bufferOffset);
    }
    for (size_t size = o_.minBytes; size <= o_.maxBytes;) {
      size_t count = spec_.roundCount(size / typeSize(o_.dtype), n_);
      for (ternRedOp_t op : o_.ops) {
        Measured out = measure(count, op, false);
        Measured in = measure(count, op, true);
        char algo[64] = "?";
        double predicted = 0;
        const size_t callCount = spec_.layout(count, n_, rank_).callCount;
        // A compressed run reports the compressed algorithm and its prediction (codec work included).
        if (o_.compress.empty() ||
            ternQueryCompressedAlgorithm(comm_, spec_.name, callCount, o_.dtype, o_.compress.c_str(), algo,
                                         sizeof(algo), &predicted) != ternSuccess) {
          ternQueryAlgorithm(comm_, spec_.name, callCount, o_.dtype, algo, sizeof(algo), &predicted);
        }
        if (leader) {
          printRow(count, op, out, in);
          printAlgorithmChange(count, out, in);
          records.push_back(record(count, op, algo, predicted, out, in));
        }
        totalWrong += std::max(0LL, out.wrong) + std::max(0LL, in.wrong);
        busSum += out.busbw + in.busbw;
        busCount += 2;
      }
      size_t next = o_.useFactor ? static_cast<size_t>(static_cast<double>(size) * o_.stepFactor) : size + o_.stepBytes;
      if (next <= size) break;
      size = next;
    }
    if (leader) {
      std::printf("# Out of bounds values : %lld %s\n", totalWrong, totalWrong ? "FAILED" : "OK");
      std::printf("# Avg bus bandwidth    : %g \n", busCount ? busSum / busCount : 0.0);
      std::printf("#\n");
      std::fflush(stdout);
      if (!o_.jsonFile.empty()) {
        std::ofstream f(o_.jsonFile);
        nlohmann::json doc = {{"collective", spec_.name},
                              {"binary", spec_.binary},
                              {"nranks", n_},
                              {"nodes", nodes_},
                              {"transport", ternCommTransportName(comm_)},
                              {"compress", o_.compress},
                              {"forced_algo", o_.algo},
                              {"results", records}};
        f << doc.dump(2) << "\n";
      }
    }
    // Every rank knows the total; the others wait for rank 0's summary, since a launcher may stop the job as soon
    // as one rank exits non-zero.
    PERF_CHECK(ternBarrier(comm_), comm_);
    return totalWrong == 0 ? 0 : 1;
  }

 private:
  // Hosts the job spans, as the library groups ranks, so that the JSON says on how many nodes it was measured
  // (tern-calc --calibrate needs it).
  int countHosts() {
    int hosts = 0;
    PERF_CHECK(ternCommHostCount(comm_, &hosts), comm_);
    return hosts;
  }

  void printHeader() {
    int version = 0;
    ternGetVersion(&version);
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    std::printf("# nThread %d nGpus 1 minBytes %zu maxBytes %zu step: ", o_.threads, o_.minBytes, o_.maxBytes);
    if (o_.useFactor) {
      std::printf("%g(factor)", o_.stepFactor);
    } else {
      std::printf("%zu(bytes)", o_.stepBytes);
    }
    std::printf(" warmup iters: %d iters: %d agg iters: 1 validation: %d graph: 0\n", o_.warmup, o_.iters, o_.check);
    std::printf("#\n# tern %d.%d.%d, %d ranks, transport %s%s%s%s%s\n", version / 10000, version / 100 % 100,
                version % 100, n_, ternCommTransportName(comm_), o_.algo.empty() ? "" : ", algorithm ", o_.algo.c_str(),
                o_.compress.empty() ? "" : ", compression ", o_.compress.c_str());
    std::printf("#  Rank %2d Group  0 Pid %6d on %10s device  0 [cpu] host memory\n", rank_, getpid(), host);
    if (o_.check) {
      std::printf(
          "#  -c check: #wrong counts elements whose bits differ from the independent reference\n"
          "#  (tests/common/reference.hpp): every output, the untouched elements around it, the send buffers\n");
    }
    if (!o_.compress.empty() && o_.check) {
      std::printf(
          "#  -Z check: #wrong counts elements off the true result by more than the codec's bound, on the\n"
          "#  mean of %d calls with a fresh compressor on check data (perf/common/compressed_bounds.hpp)\n",
          compressed_check::checkCalls(compressed_check::parseCodec(o_.compress), n_));
    }
    std::printf("#\n");
    std::printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "",
                "", "", "");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size", "count", "type", "redop",
                "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "", "",
                "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    std::fflush(stdout);
  }

  void printRow(size_t count, ternRedOp_t op, const Measured& out, const Measured& in) {
    std::printf("%12zu  %12zu  %8s  %6s  %6i", count * typeSize(o_.dtype), count, typeName(o_.dtype),
                spec_.hasOp ? opName(op) : "none", spec_.hasRoot ? o_.root : -1);
    for (const Measured* m : {&out, &in}) {
      char wrong[32];
      if (m->wrong < 0) {
        std::snprintf(wrong, sizeof(wrong), "N/A");
      } else {
        std::snprintf(wrong, sizeof(wrong), "%lld", m->wrong);
      }
      std::printf("  %7s  %6.2f  %6.2f  %5s", compare::FormatTime(m->timeUs).c_str(), m->algbw, m->busbw, wrong);
    }
    std::printf("\n");
    std::fflush(stdout);
  }

  std::string lastAlgorithm() const {
    char name[128] = "";
    if (ternCommLastAlgorithm(comm_, name, sizeof(name)) != ternSuccess || name[0] == '\0') return "?";
    return name;
  }

  // The algorithm that ran, as a comment line under the first row of each run of sizes that ran it (the table's
  // columns stay those of nccl-tests, which other tools parse).
  void printAlgorithmChange(size_t count, const Measured& out, const Measured& in) {
    std::string ran =
        out.algorithm == in.algorithm ? out.algorithm : "out of place " + out.algorithm + ", in place " + in.algorithm;
    if (ran == lastPrintedAlgorithm_) return;
    std::printf("#  %zu B and up: %s\n", count * typeSize(o_.dtype), ran.c_str());
    std::fflush(stdout);
    lastPrintedAlgorithm_ = ran;
  }

  nlohmann::json record(size_t count, ternRedOp_t op, const char* algo, double predicted, const Measured& out,
                        const Measured& in) {
    auto one = [&](const Measured& m) {
      nlohmann::json j = {{"time_us", m.timeUs}, {"algbw", m.algbw}, {"busbw", m.busbw}, {"wrong", m.wrong}};
      if (o_.iterStats) {
        j["min_us"] = m.minUs;
        j["max_us"] = m.maxUs;
        j["p99_us"] = m.p99Us;
      }
      return j;
    };
    return {{"size", count * typeSize(o_.dtype)},
            {"count", count},
            {"type", typeName(o_.dtype)},
            {"redop", spec_.hasOp ? opName(op) : "none"},
            {"root", spec_.hasRoot ? o_.root : -1},
            {"algorithm", out.algorithm},
            {"predicted_algorithm", o_.algo.empty() ? algo : o_.algo},
            {"predicted_us", predicted},
            {"out_of_place", one(out)},
            {"in_place", one(in)}};
  }

  const CollectiveSpec& spec_;
  const PerfOptions& o_;
  ternComm_t comm_;
  int n_ = 1, rank_ = 0;
  std::string lastPrintedAlgorithm_;
  Buffer sendBuf_, recvBuf_;
  int nodes_ = 1;
};

bool launchedByLauncher() {
  for (const char* v : {"TERN_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}

}  // namespace

int runPerf(const CollectiveSpec& spec, int argc, char** argv) {
  PerfOptions o = parsePerfOptions(argc, argv, spec.binary, spec.hasOp, spec.hasRoot);
  if (!o.algo.empty()) setenv("TERN_ALGO", (std::string(spec.name) + ":" + o.algo).c_str(), 1);
  if (!o.compress.empty()) setenv("TERN_COMPRESS", o.compress.c_str(), 1);
  if (launchedByLauncher()) {
    if (o.threads != 1) {
      std::fprintf(stderr, "%s: -t is for single-process runs; under a launcher use one rank per process\n",
                   spec.binary);
      return 2;
    }
    ternComm_t comm = nullptr;
    PERF_CHECK(ternCommInitFromEnv(&comm, nullptr), nullptr);
    int rc = RankRunner(spec, o, comm).run();
    ternCommDestroy(comm);
    return rc;
  }
  // Single process: o.threads ranks as threads.
  ternUniqueId id;
  PERF_CHECK(ternGetUniqueId(&id), nullptr);
  std::vector<int> rcs(o.threads, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < o.threads; ++r) {
    threads.emplace_back([&, r] {
      ternComm_t comm = nullptr;
      PERF_CHECK(ternCommInitRank(&comm, o.threads, id, r), nullptr);
      rcs[r] = RankRunner(spec, o, comm).run();
      ternCommDestroy(comm);
    });
  }
  for (auto& t : threads) t.join();
  return *std::max_element(rcs.begin(), rcs.end());
}

}  // namespace tern::perf
