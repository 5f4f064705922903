// Tests of every schedule builder: the schedules of all ranks run together in the reference simulator
// (schedule_sim.hpp) on real data, in random legal orders, with eager and rendezvous send semantics; the outputs
// are compared with the independent reference (tests/common/reference.hpp), across every collective, dtype, op,
// rank count 1..16, odd counts, in place and out of place, chunked (pipelined) and not, with ring orders and host
// layouts.
//
// Data is chosen so that every reduction is exact in every dtype (small integers, products of +-1 with one 2 or 1/2,
// +-0 for max/min): any reduction order then gives the same value, so results must match the reference bit for bit,
// and a wrong or missing contribution shows as a wrong value rather than hiding in a rounding tolerance. Separate
// "noisy" cases use random reals, where order matters: they are compared with the exact result within the error
// bound that round-to-nearest arithmetic allows for any order (derived at Harness::noisyBound), and must still be
// bit-identical on every rank and under every execution order (determinism).
//
// Each case runs in an eager and a rendezvous execution order; TERN_SIM_RUNS=N runs N orders per case instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/chunking.hpp"
#include "algorithms/registry.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "common/reference.hpp"
#include "schedule_sim.hpp"

namespace tern {
namespace {

using sim::RankBuffers;

constexpr ternDataType_t kAllTypes[] = {ternInt8,   ternUint8,   ternInt32,   ternUint32,  ternInt64,
                                        ternUint64, ternFloat16, ternFloat32, ternFloat64, ternBfloat16};
constexpr ternRedOp_t kAllOps[] = {ternSum, ternProd, ternMax, ternMin, ternAvg};

bool isFloat(ternDataType_t t) { return t == ternFloat16 || t == ternFloat32 || t == ternFloat64 || t == ternBfloat16; }
bool isSigned(ternDataType_t t) { return t == ternInt8 || t == ternInt32 || t == ternInt64; }
bool isReduction(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kReduceScatter || c == Collective::kReduce;
}

// Elements are written and read through the independent reference (its own fp16/bf16 rounding).
void store(uint8_t* p, ternDataType_t t, double v) { ref::store(p, 0, t, v); }
double load(const uint8_t* p, ternDataType_t t) { return ref::load(p, 0, t); }

// Element value of rank r at index i; exact under every reduction order (see the file comment).
double exactValue(std::mt19937_64& g, ternDataType_t t, ternRedOp_t op, int r) {
  auto pick = [&g](std::initializer_list<double> xs) { return *(xs.begin() + g() % xs.size()); };
  if (op == ternProd) {
    // Unsigned products wrap exactly (0..8 over up to 16 ranks stays below 2^53, where the reference's doubles
    // hold every 64-bit product exactly; it wraps uint8 and, from 11 ranks on, uint32).
    if (!isFloat(t) && !isSigned(t)) return static_cast<double>(g() % 9);
    if (r == 0) return pick({1, -1, 2});
    if (r == 1) return isFloat(t) ? pick({1, -1, 0.5}) : pick({1, -1, 3});
    return pick({1, -1});
  }
  if ((op == ternSum) && !isFloat(t) && !isSigned(t)) return static_cast<double>(g() % 256);
  if ((op == ternMax || op == ternMin) && isFloat(t) && g() % 4 == 0) return pick({0.0, -0.0});
  return static_cast<double>(static_cast<int>(g() % 15) - 7) + (isSigned(t) || isFloat(t) ? 0 : 7);
}

struct Case {
  std::string algo;
  Collective coll = Collective::kAllReduce;
  int nranks = 1;
  size_t count = 0;
  ternDataType_t dtype = ternFloat32;
  ternRedOp_t op = ternSum;
  int root = 0;
  bool inPlace = false;
  BuildOptions options;
  bool noisy = false;
  int runs = 2;  // run 0: eager sends; run 1: rendezvous sends; more: alternate with other seeds
  uint64_t dataSeed = 7;
  bool hazardCheck = true;
  std::function<void(std::vector<Schedule>&)> mutate;  // simulator self-tests: break the schedules first
};

std::string describe(const Case& c) {
  std::ostringstream o;
  o << collectiveName(c.coll) << "/" << c.algo << " n=" << c.nranks << " count=" << c.count << " "
    << dataTypeName(c.dtype) << " " << redOpName(c.op) << " root=" << c.root << (c.inPlace ? " in-place" : "")
    << " chunk=" << c.options.pipelineChunkBytes << (c.noisy ? " noisy" : "");
  if (!c.options.hostOf.empty()) {
    o << " hostOf={";
    for (int h : c.options.hostOf) o << h << ",";
    o << "}";
  }
  if (!c.options.ringOrder.empty()) {
    o << " ringOrder={";
    for (int h : c.options.ringOrder) o << h << ",";
    o << "}";
  }
  return o.str();
}

// Per-rank alltoallv layout: send/recv counts and displacements in elements.
struct VLayout {
  std::vector<std::vector<size_t>> sc, sd, rc, rd;  // [rank][peer]
  std::vector<size_t> inElems, outElems;
};

VLayout makeVLayout(int n, size_t maxCount, uint64_t seed) {
  std::mt19937_64 g(seed);
  VLayout v;
  std::vector<std::vector<size_t>> m(n, std::vector<size_t>(n));
  for (auto& row : m) {
    for (auto& x : row) x = maxCount == 0 ? 0 : (g() % 4 == 0 ? 0 : g() % (maxCount + 1));
  }
  v.sc.assign(n, {});
  v.sd.assign(n, {});
  v.rc.assign(n, {});
  v.rd.assign(n, {});
  v.inElems.assign(n, 0);
  v.outElems.assign(n, 0);
  for (int a = 0; a < n; ++a) {
    // Blocks in a shuffled order with random gaps, so displacements are not just prefix sums.
    std::vector<int> perm(n);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), g);
    v.sc[a].assign(n, 0);
    v.sd[a].assign(n, 0);
    size_t off = 0;
    for (int b : perm) {
      off += g() % 3;
      v.sc[a][b] = m[a][b];
      v.sd[a][b] = off;
      off += m[a][b];
    }
    v.inElems[a] = off + g() % 2;
    std::shuffle(perm.begin(), perm.end(), g);
    v.rc[a].assign(n, 0);
    v.rd[a].assign(n, 0);
    off = 0;
    for (int b : perm) {
      off += g() % 3;
      v.rc[a][b] = m[b][a];
      v.rd[a][b] = off;
      off += m[b][a];
    }
    v.outElems[a] = off + g() % 2;
  }
  return v;
}

class Harness {
 public:
  explicit Harness(const Case& c) : c_(c), n_(c.nranks), e_(dataTypeSize(c.dtype)) {}

  // Empty on success, else what went wrong.
  std::string run() {
    info_ = findAlgorithm(c_.coll, c_.algo);
    if (info_ == nullptr) return "no such algorithm";
    if (c_.coll == Collective::kAlltoAllv) v_ = makeVLayout(n_, c_.count, c_.dataSeed + 1000 * n_);
    std::vector<Schedule> schedules;
    for (int r = 0; r < n_; ++r) {
      schedules.push_back(info_->build(argsFor(r), r, n_, c_.options));
      if (schedules.back().algorithm != c_.algo) return "schedule names algorithm '" + schedules.back().algorithm + "'";
      maxScratch_ = std::max(maxScratch_, schedules.back().scratchBytes);
      totalSteps_ += schedules.back().steps.size();
    }
    if (c_.mutate) c_.mutate(schedules);
    makeInputs();
    std::vector<std::vector<uint8_t>> firstOutputs;
    for (int run = 0; run < c_.runs; ++run) {
      std::vector<RankBuffers> bufs = initial_;
      sim::SimOptions so;
      so.seed = c_.dataSeed * 1315423911u + static_cast<uint64_t>(run) * 2654435761u + 1;
      so.rendezvous = (run % 2 == 1);
      so.dtype = c_.dtype;
      so.op = c_.op;
      so.staticHazardCheck = c_.hazardCheck && run == 0;
      sim::SimResult res = sim::simulate(schedules, bufs, so);
      if (!res.ok()) return std::string(so.rendezvous ? "[rendezvous] " : "[eager] ") + res.error;
      if (c_.coll == Collective::kBarrier) {
        const uint64_t all = n_ >= 64 ? ~uint64_t{0} : (uint64_t{1} << n_) - 1;
        for (int r = 0; r < n_; ++r) {
          if (res.heardFrom[r] != all) return "rank " + std::to_string(r) + " leaves the barrier too early";
        }
        continue;
      }
      std::string err = check(bufs);
      if (!err.empty()) return std::string(so.rendezvous ? "[rendezvous] " : "[eager] ") + err;
      // Determinism: every execution order gives the same bits.
      std::vector<std::vector<uint8_t>> outs;
      for (int r = 0; r < n_; ++r) outs.push_back(outputBytes(bufs[r]));
      if (run == 0) {
        firstOutputs = outs;
      } else if (outs != firstOutputs) {
        return "results differ between execution orders (non-deterministic)";
      }
    }
    return "";
  }

  size_t maxScratch() const { return maxScratch_; }
  size_t totalSteps() const { return totalSteps_; }

 private:
  CollArgs argsFor(int r) const {
    CollArgs a;
    a.coll = c_.coll;
    a.count = c_.count;
    a.dtype = c_.dtype;
    a.op = c_.op;
    a.root = c_.root;
    a.inPlace = c_.inPlace;
    if (c_.coll == Collective::kAlltoAllv) {
      a.sendCounts = v_.sc[r];
      a.sendDispls = v_.sd[r];
      a.recvCounts = v_.rc[r];
      a.recvDispls = v_.rd[r];
    }
    return a;
  }

  size_t inElems(int r) const {
    switch (c_.coll) {
      case Collective::kReduceScatter:
      case Collective::kAlltoAll:
        return c_.count * n_;
      case Collective::kAlltoAllv:
        return v_.inElems[r];
      case Collective::kBarrier:
        return 0;
      default:
        return c_.count;
    }
  }
  size_t outElems(int r) const {
    switch (c_.coll) {
      case Collective::kAllGather:
      case Collective::kAlltoAll:
        return c_.count * n_;
      case Collective::kAlltoAllv:
        return v_.outElems[r];
      case Collective::kBarrier:
        return 0;
      default:
        return c_.count;
    }
  }
  bool hasInput(int r) const { return c_.coll != Collective::kBroadcast || r == c_.root; }
  bool hasOutput(int r) const { return c_.coll != Collective::kReduce || r == c_.root; }

  void makeInputs() {
    initial_.assign(n_, {});
    inputs_.assign(n_, {});
    std::mt19937_64 g(c_.dataSeed * 7919 + n_ * 31 + c_.count);
    std::uniform_real_distribution<double> noise(-1.0, 1.0);
    for (int r = 0; r < n_; ++r) {
      RankBuffers& b = initial_[r];
      const size_t ib = inElems(r) * e_, ob = outElems(r) * e_;
      std::vector<uint8_t>& in = inputs_[r];
      in.assign(ib, 0);
      for (size_t i = 0; i < inElems(r); ++i) {
        double v = c_.noisy ? noise(g) : exactValue(g, c_.dtype, c_.op, r);
        store(in.data() + i * e_, c_.dtype, v);
      }
      b.hasInput = hasInput(r);
      b.hasOutput = hasOutput(r);
      if (!c_.inPlace) {
        b.inputOffset = 0;
        b.inputBytes = ib;
        b.outputOffset = (ib + 63) / 64 * 64 + 64;
        b.outputBytes = ob;
        b.arena.assign(b.outputOffset + ob + 64, 0xA5);
      } else {
        switch (c_.coll) {
          case Collective::kAllGather:
            b.outputOffset = 0;
            b.outputBytes = ob;
            b.inputOffset = static_cast<size_t>(r) * c_.count * e_;
            b.inputBytes = ib;
            b.arena.assign(ob, 0xA5);
            break;
          case Collective::kReduceScatter:
            b.inputOffset = 0;
            b.inputBytes = ib;
            b.outputOffset = static_cast<size_t>(r) * c_.count * e_;
            b.outputBytes = ob;
            b.arena.assign(ib, 0xA5);
            break;
          default:
            b.inputOffset = b.outputOffset = 0;
            b.inputBytes = ib;
            b.outputBytes = ob;
            b.arena.assign(std::max(ib, ob), 0xA5);
            break;
        }
      }
      b.defined.assign(b.arena.size(), 0);
      if (b.hasInput && ib > 0) {
        std::memcpy(b.arena.data() + b.inputOffset, in.data(), ib);
        std::memset(b.defined.data() + b.inputOffset, 1, ib);
      }
      if (!b.hasInput) b.inputBytes = 0;
      if (!b.hasOutput) b.outputBytes = 0;
    }
  }

  std::vector<uint8_t> outputBytes(const RankBuffers& b) const {
    if (!b.hasOutput) return {};
    return {b.arena.begin() + b.outputOffset, b.arena.begin() + b.outputOffset + b.outputBytes};
  }

  // The expected reduction of elements [off, off + cnt). Exact data: the independent reference's value, rounded to
  // the dtype once, compared bit for bit. Noisy sums, averages and products: the exact value (in long double) and
  // how far a correctly rounded computation in any order may stray from it (noisyBound).
  struct Expected {
    std::vector<uint8_t> bits;
    std::vector<double> exact, bound;
  };
  bool withinBound() const { return c_.noisy && (c_.op == ternSum || c_.op == ternAvg || c_.op == ternProd); }

  Expected reference(size_t off, size_t cnt) const {
    Expected x;
    std::vector<double> vals(n_);
    if (withinBound()) {
      x.exact.resize(cnt);
      x.bound.resize(cnt);
    } else {
      x.bits.assign(cnt * e_, 0);
    }
    for (size_t i = 0; i < cnt; ++i) {
      for (int r = 0; r < n_; ++r) vals[r] = load(inputs_[r].data() + (off + i) * e_, c_.dtype);
      if (withinBound()) {
        noisyBound(vals, &x.exact[i], &x.bound[i]);
      } else {
        store(x.bits.data() + i * e_, c_.dtype,
              withZeroSign(vals, ref::reduceValues(vals.data(), n_, c_.dtype, c_.op)));
      }
    }
    return x;
  }

  // The reference keeps the first of equal values; tern's max/min of +0 and -0 is defined as +0 (max) and -0
  // (min) whatever the order (the AND / OR of the bits), so a zero result takes that sign.
  double withZeroSign(const std::vector<double>& vals, double v) const {
    if (!isFloat(c_.dtype) || v != 0 || (c_.op != ternMax && c_.op != ternMin)) return v;
    bool positive = false, negative = false;
    for (double x : vals) {
      if (x == 0) (std::signbit(x) ? negative : positive) = true;
    }
    if (c_.op == ternMax) return positive ? 0.0 : -0.0;
    return negative ? -0.0 : 0.0;
  }

  // Error bound for noisy data (inputs x_1..x_n, already rounded to the dtype, |x_i| <= 1).
  //
  // One combining step rounds to nearest: fp32 and fp64 once (u = 2^-24, 2^-53); fp16 and bf16 are widened,
  // combined in fp32 and rounded again in their own format, so one step is exact(1 + d1)(1 + d2) with |d1| <=
  // 2^-24 and |d2| <= 2^-11 (fp16) or 2^-8 (bf16): u = (1 + 2^-11)(1 + 2^-24) - 1, resp. with 2^-8.
  //
  // Sum: any reduction tree has n - 1 additions and every input goes through at most n - 1 of them, each
  // multiplying it by some (1 + d), |d| <= u (an addition whose result is subnormal is exact, so there is no
  // absolute term). Hence |s^ - s| <= g(n-1) sum|x_i| with g(k) = k u / (1 - k u) (Higham, "Accuracy and Stability
  // of Numerical Algorithms", Lemma 3.1 and section 4.2), for every order the algorithm may choose.
  // Avg: s^ is divided once (in fp32 for fp16/bf16/fp32, then rounded to the dtype): |a^ - s/n| <= |s^ - s| / n +
  // u |s^| / n + eta, with |s^| <= |s| + |s^ - s| and eta half the dtype's smallest subnormal (the quotient may be
  // subnormal in fp16).
  // Prod: n - 1 multiplications, each ab(1 + d) or, when the result is subnormal, ab + e with |e| <= eta. Every
  // partial product has magnitude <= 1, so an absolute error is only ever multiplied by factors <= 1 (times
  // (1 + d) terms, under 2 together): |p^ - p| <= g(n-1) |p| + 2 (n - 1) eta.
  // The exact values are computed in long double, whose own error (the same bounds with its unit roundoff) is
  // added: it matters only for fp64.
  void noisyBound(const std::vector<double>& vals, double* exact, double* bound) const {
    const double u32 = 0x1p-24;
    double u = 0x1p-53, eta = 0x1p-1074;
    if (c_.dtype == ternFloat16) {
      u = (1 + 0x1p-11) * (1 + u32) - 1;
      eta = 0x1p-25;
    } else if (c_.dtype == ternBfloat16) {
      u = (1 + 0x1p-8) * (1 + u32) - 1;
      eta = 0x1p-134;
    } else if (c_.dtype == ternFloat32) {
      u = u32;
      eta = 0x1p-150;
    }
    const auto gamma = [](int k, double unit) { return k * unit / (1 - k * unit); };
    const double uRef = std::ldexp(1.0, -std::numeric_limits<long double>::digits);
    const int steps = n_ - 1;
    if (c_.op == ternProd) {
      long double p = 1;
      for (double x : vals) p *= x;
      const double ap = std::fabs(static_cast<double>(p));
      *exact = static_cast<double>(p);
      *bound = gamma(steps, u) * ap + 2 * steps * eta + gamma(steps, uRef) * ap;
      return;
    }
    long double sum = 0, absSum = 0;
    for (double x : vals) {
      sum += x;
      absSum += std::fabs(x);
    }
    const double sumErr = gamma(steps, u) * static_cast<double>(absSum) + gamma(n_, uRef) * static_cast<double>(absSum);
    if (c_.op == ternSum) {
      *exact = static_cast<double>(sum);
      *bound = sumErr;
      return;
    }
    const double divU = c_.dtype == ternFloat64 ? 0x1p-53 : u;
    *exact = static_cast<double>(sum / n_);
    *bound = sumErr / n_ + divU * (std::fabs(static_cast<double>(sum)) + sumErr) / n_ + eta;
  }

  std::string mismatch(const uint8_t* a, const uint8_t* b, const std::string& what, size_t i) const {
    std::ostringstream o;
    o << what << ": element " << i << " is ";
    uint64_t x = 0, y = 0;
    std::memcpy(&x, a, e_);
    std::memcpy(&y, b, e_);
    if (isFloat(c_.dtype)) o << load(a, c_.dtype) << ", expected " << load(b, c_.dtype) << " (";
    o << "0x" << std::hex << x << ", expected 0x" << y << (isFloat(c_.dtype) ? ")" : "");
    return o.str();
  }

  // Bit-for-bit comparison of cnt elements (data movement, and reductions of exact data).
  std::string compareBits(const uint8_t* got, const uint8_t* want, size_t cnt, const std::string& what) const {
    if (cnt == 0 || std::memcmp(got, want, cnt * e_) == 0) return "";
    for (size_t i = 0; i < cnt; ++i) {
      if (std::memcmp(got + i * e_, want + i * e_, e_) != 0) return mismatch(got + i * e_, want + i * e_, what, i);
    }
    return "";
  }

  std::string compareReduction(const uint8_t* got, const Expected& want, size_t cnt, const std::string& what) const {
    if (!withinBound()) return compareBits(got, want.bits.data(), cnt, what);
    for (size_t i = 0; i < cnt; ++i) {
      const double x = load(got + i * e_, c_.dtype);
      if (!(std::fabs(x - want.exact[i]) <= want.bound[i])) {
        std::ostringstream o;
        o << what << ": element " << i << " is " << x << ", exact " << want.exact[i] << ", allowed error "
          << want.bound[i];
        return o.str();
      }
    }
    return "";
  }

  std::string check(const std::vector<RankBuffers>& bufs) const {
    const size_t cnt = c_.count;
    Expected whole;
    if (c_.coll == Collective::kAllReduce || c_.coll == Collective::kReduce) whole = reference(0, cnt);
    for (int r = 0; r < n_; ++r) {
      const RankBuffers& b = bufs[r];
      const uint8_t* out = b.hasOutput ? b.arena.data() + b.outputOffset : nullptr;
      const std::string who = "rank " + std::to_string(r);
      // The output must be fully written (every byte defined), except alltoallv gaps.
      if (b.hasOutput && c_.coll != Collective::kAlltoAllv && b.outputBytes > 0) {
        const uint8_t* def = b.defined.data() + b.outputOffset;
        const void* hole = std::memchr(def, 0, b.outputBytes);
        if (hole != nullptr) {
          return who + ": output byte " + std::to_string(static_cast<const uint8_t*>(hole) - def) + " never written";
        }
      }
      std::string err;
      switch (c_.coll) {
        case Collective::kAllReduce:
          err = compareReduction(out, whole, cnt, who);
          if (err.empty() && r > 0 && cnt > 0 &&
              std::memcmp(out, bufs[0].arena.data() + bufs[0].outputOffset, cnt * e_) != 0) {
            err = who + ": output differs in bits from rank 0's (non-deterministic reduction)";
          }
          break;
        case Collective::kReduce:
          if (r == c_.root) err = compareReduction(out, whole, cnt, who);
          break;
        case Collective::kReduceScatter: {
          err = compareReduction(out, reference(static_cast<size_t>(r) * cnt, cnt), cnt, who);
          break;
        }
        case Collective::kAllGather:
          for (int q = 0; q < n_ && err.empty(); ++q) {
            err = compareBits(out + q * cnt * e_, inputs_[q].data(), cnt, who + " block " + std::to_string(q));
          }
          break;
        case Collective::kBroadcast:
          err = compareBits(out, inputs_[c_.root].data(), cnt, who);
          break;
        case Collective::kAlltoAll:
          for (int q = 0; q < n_ && err.empty(); ++q) {
            err = compareBits(out + q * cnt * e_, inputs_[q].data() + r * cnt * e_, cnt,
                              who + " block from " + std::to_string(q));
          }
          break;
        case Collective::kAlltoAllv: {
          std::vector<uint8_t> covered(b.outputBytes, 0);
          for (int q = 0; q < n_ && err.empty(); ++q) {
            err = compareBits(out + v_.rd[r][q] * e_, inputs_[q].data() + v_.sd[q][r] * e_, v_.rc[r][q],
                              who + " block from " + std::to_string(q));
            if (v_.rc[r][q] > 0) std::memset(covered.data() + v_.rd[r][q] * e_, 1, v_.rc[r][q] * e_);
          }
          // Bytes outside every receive region keep what was there before.
          for (size_t k = 0; k < b.outputBytes && err.empty(); ++k) {
            if (covered[k]) continue;
            const uint8_t before = initial_[r].arena[b.outputOffset + k];
            if (out[k] != before) err = who + ": output byte " + std::to_string(k) + " outside all regions changed";
          }
          break;
        }
        default:
          break;
      }
      if (!err.empty()) return err;
    }
    return "";
  }

  Case c_;
  int n_;
  size_t e_;
  const AlgorithmInfo* info_ = nullptr;
  VLayout v_;
  std::vector<RankBuffers> initial_;
  std::vector<std::vector<uint8_t>> inputs_;
  size_t maxScratch_ = 0;
  size_t totalSteps_ = 0;
};

std::string runCase(const Case& c) {
  try {
    // TERN_SIM_RUNS=N explores N execution orders per case (alternating eager/rendezvous) for a deeper soak.
    if (const char* env = std::getenv("TERN_SIM_RUNS"); env != nullptr && std::atoi(env) > c.runs && !c.mutate) {
      Case deeper = c;
      deeper.runs = std::atoi(env);
      return Harness(deeper).run();
    }
    return Harness(c).run();
  } catch (const std::exception& e) {
    return std::string("exception: ") + e.what();
  }
}

#define EXPECT_CASE(c)                            \
  do {                                            \
    const Case& cc_ = (c);                        \
    EXPECT_EQ(runCase(cc_), "") << describe(cc_); \
  } while (0)

// ---------------------------------------------------------------------------------------------------------------
// Registry

TEST(AlgorithmsRegistry, TableIsCompleteAndConsistent) {
  const std::vector<std::pair<Collective, std::vector<std::string>>> expected = {
      {Collective::kAllReduce, {"ring", "tree", "dbtree", "rd", "rhd", "hier"}},
      {Collective::kAllGather, {"ring", "rd", "bruck", "hier"}},
      {Collective::kReduceScatter, {"ring", "rh", "hier"}},
      {Collective::kBroadcast, {"chain", "binomial", "scatter_allgather"}},
      {Collective::kReduce, {"chain", "binomial"}},
      {Collective::kAlltoAll, {"pairwise", "bruck"}},
      {Collective::kAlltoAllv, {"pairwise"}},
      {Collective::kBarrier, {"dissemination"}},
  };
  for (const auto& [coll, names] : expected) {
    for (const auto& name : names) {
      const AlgorithmInfo* a = findAlgorithm(coll, name);
      ASSERT_NE(a, nullptr) << collectiveName(coll) << "/" << name;
      EXPECT_EQ(a->collective, coll);
      EXPECT_STREQ(a->name, name.c_str());
      EXPECT_NE(a->build, nullptr);
      ASSERT_NE(a->description, nullptr);
      EXPECT_GT(std::strlen(a->description), 10u);
      EXPECT_EQ(std::string(a->description).find('\n'), std::string::npos);
    }
  }
  std::set<std::pair<int, std::string>> seen;
  for (const AlgorithmInfo& a : algorithms()) {
    EXPECT_TRUE(seen.insert({static_cast<int>(a.collective), a.name}).second) << "duplicate " << a.name;
    EXPECT_EQ(findAlgorithm(a.collective, a.name), &a);
  }
  EXPECT_EQ(findAlgorithm(Collective::kAllReduce, "nonexistent"), nullptr);
  EXPECT_EQ(findAlgorithm(Collective::kBarrier, "ring"), nullptr);
}

// ---------------------------------------------------------------------------------------------------------------
// Geometry helpers

TEST(AlgorithmsGeometry, EvenPartsCoverTheRange) {
  for (size_t count : {0, 1, 7, 1023}) {
    for (size_t parts = 1; parts <= 17; ++parts) {
      size_t next = 5;
      for (size_t i = 0; i < parts; ++i) {
        algo::ElemRange r = algo::evenPart(count, parts, i, 5);
        EXPECT_EQ(r.offset, next);
        EXPECT_LE(r.count, count / parts + 1);
        next = r.end();
      }
      EXPECT_EQ(next, 5 + count);
    }
  }
  std::vector<algo::ElemRange> p;
  algo::appendPieces(p, {10, 1023}, 100);
  ASSERT_EQ(p.size(), 11u);
  EXPECT_EQ(p.front().offset, 10u);
  EXPECT_EQ(p.back().end(), 1033u);
  EXPECT_EQ(algo::maxCount(p), 93u);
}

TEST(AlgorithmsGeometry, BinaryTreesAreConsistentAndComplementary) {
  for (int n = 1; n <= 40; ++n) {
    for (int which = 0; which < 2; ++which) {
      int roots = 0;
      std::vector<int> parentOf(n, -2);
      for (int v = 0; v < n; ++v) {
        algo::TreeLinks t = which == 0 ? algo::btreeLinks(n, v) : algo::btreeComplementLinks(n, v);
        EXPECT_LE(t.children.size(), 2u);
        if (t.parent < 0) ++roots;
        for (int c : t.children) {
          ASSERT_GE(c, 0);
          ASSERT_LT(c, n);
          EXPECT_EQ(parentOf[c], -2) << "two parents for " << c;
          parentOf[c] = v;
        }
      }
      EXPECT_EQ(roots, 1) << "n=" << n;
      for (int v = 0; v < n; ++v) {
        algo::TreeLinks t = which == 0 ? algo::btreeLinks(n, v) : algo::btreeComplementLinks(n, v);
        if (t.parent >= 0) {
          EXPECT_EQ(parentOf[v], t.parent) << "n=" << n << " v=" << v;
        }
        // Reaches the root without cycles.
        int x = v, steps = 0;
        while (x >= 0 && steps <= n) {
          x = which == 0 ? algo::btreeLinks(n, x).parent : algo::btreeComplementLinks(n, x).parent;
          ++steps;
        }
        EXPECT_LE(steps, n) << "cycle at n=" << n;
      }
    }
    if (n % 2 == 0 && n > 2) {
      // Leaves of one tree are inner nodes of the other.
      for (int v = 0; v < n; ++v) {
        bool leaf0 = algo::btreeLinks(n, v).children.empty();
        bool leaf1 = algo::btreeComplementLinks(n, v).children.empty();
        EXPECT_FALSE(leaf0 && leaf1) << "n=" << n << " v=" << v;
      }
    }
  }
}

TEST(AlgorithmsGeometry, BadOptionsAreRejected) {
  CollArgs a;
  a.count = 16;
  BuildOptions o;
  o.ringOrder = {0, 1, 1, 3};
  EXPECT_THROW(buildRingAllReduce(a, 0, 4, o), Error);
  o.ringOrder = {0, 1, 2};
  EXPECT_THROW(buildRingAllReduce(a, 0, 4, o), Error);
  o.ringOrder = {};
  o.hostOf = {0, 0, 1};
  EXPECT_THROW(buildHierAllReduce(a, 0, 4, o), Error);
  a.coll = Collective::kAlltoAllv;
  a.sendCounts = {1, 1};
  EXPECT_THROW(buildPairwiseAlltoAllv(a, 0, 4, BuildOptions{}), Error);
}

// ---------------------------------------------------------------------------------------------------------------
// The sweep: every algorithm, ranks 1..16, counts {0, 1, 7, 1023}, in place and not. Dtype and op rotate through
// all combinations across the cases (all 50 for reductions), so the sweep as a whole covers every dtype x op.

struct AlgoParam {
  Collective coll;
  const char* name;
};

std::vector<AlgoParam> allAlgorithms() {
  std::vector<AlgoParam> out;
  for (const AlgorithmInfo& a : algorithms()) {
    if (a.collective == Collective::kPointToPoint) continue;
    out.push_back({a.collective, a.name});
  }
  return out;
}

std::string paramName(const testing::TestParamInfo<AlgoParam>& info) {
  std::string s = std::string(collectiveName(info.param.coll)) + "_" + info.param.name;
  for (char& ch : s) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return s;
}

class AlgorithmsSweep : public testing::TestWithParam<AlgoParam> {};

TEST_P(AlgorithmsSweep, AllRankCountsAndSizes) {
  const AlgoParam p = GetParam();
  const size_t counts[] = {0, 1, 7, 1023};
  int combo = 0;
  for (int n = 1; n <= 16; ++n) {
    for (size_t ci = 0; ci < 4; ++ci) {
      for (int inPlace = 0; inPlace < 2; ++inPlace) {
        Case c;
        c.algo = p.name;
        c.coll = p.coll;
        c.nranks = n;
        c.count = counts[ci];
        c.inPlace = inPlace != 0;
        const int k = combo++;
        if (isReduction(p.coll)) {
          c.dtype = kAllTypes[k % 10];
          c.op = kAllOps[(k / 10 + k) % 5];
        } else {
          c.dtype = kAllTypes[(k * 3) % 10];
        }
        c.root = (n * 5 + static_cast<int>(ci)) % n;
        // Small chunks for the larger count so that every pipelined algorithm really runs many chunks.
        if (c.count == 1023) c.options.pipelineChunkBytes = (k % 2 == 0) ? 256 : 100 * c.options.pipelineChunkBytes;
        if (std::string(p.name) == "hier") {
          for (int r = 0; r < n; ++r) c.options.hostOf.push_back(r / 3);
        }
        c.dataSeed = static_cast<uint64_t>(k + 1);
        EXPECT_CASE(c);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, AlgorithmsSweep, testing::ValuesIn(allAlgorithms()), paramName);

// ---------------------------------------------------------------------------------------------------------------
// Every dtype x every op for every reducing algorithm, on a power of two and a non-power of two, plus "noisy"
// real-valued data for the float types (within the rounding bound of the exact result, bit-identical across ranks
// and orders).

std::vector<AlgoParam> reducingAlgorithms() {
  std::vector<AlgoParam> out;
  for (const AlgoParam& p : allAlgorithms()) {
    if (isReduction(p.coll)) out.push_back(p);
  }
  return out;
}

class AlgorithmsDtypeOp : public testing::TestWithParam<AlgoParam> {};

TEST_P(AlgorithmsDtypeOp, EveryTypeAndOp) {
  const AlgoParam p = GetParam();
  int k = 0;
  for (int n : {3, 4}) {
    for (ternDataType_t t : kAllTypes) {
      for (ternRedOp_t op : kAllOps) {
        Case c;
        c.algo = p.name;
        c.coll = p.coll;
        c.nranks = n;
        c.count = (k % 3 == 0) ? 7 : 1023;
        c.dtype = t;
        c.op = op;
        c.root = k % n;
        c.inPlace = (k % 2) == 1;
        c.options.pipelineChunkBytes = 128;
        if (std::string(p.name) == "hier")
          c.options.hostOf = n == 4 ? std::vector<int>{0, 0, 1, 1} : std::vector<int>{0, 1, 0};
        c.dataSeed = static_cast<uint64_t>(++k);
        EXPECT_CASE(c);
      }
    }
  }
}

TEST_P(AlgorithmsDtypeOp, NoisyFloatsAreDeterministic) {
  const AlgoParam p = GetParam();
  int k = 0;
  for (int n : {5, 8, 13}) {
    for (ternDataType_t t : {ternFloat16, ternFloat32, ternFloat64, ternBfloat16}) {
      for (ternRedOp_t op : {ternSum, ternAvg, ternProd}) {
        Case c;
        c.algo = p.name;
        c.coll = p.coll;
        c.nranks = n;
        c.count = 1023;
        c.dtype = t;
        c.op = op;
        c.noisy = true;
        c.root = (k * 3) % n;
        c.inPlace = (k % 2) == 1;
        c.runs = 3;
        c.options.pipelineChunkBytes = 512;
        if (std::string(p.name) == "hier") {
          for (int r = 0; r < n; ++r) c.options.hostOf.push_back(r % 3);
        }
        c.dataSeed = static_cast<uint64_t>(++k);
        EXPECT_CASE(c);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, AlgorithmsDtypeOp, testing::ValuesIn(reducingAlgorithms()), paramName);

// ---------------------------------------------------------------------------------------------------------------
// Large messages: 2^20 + 3 elements (per-rank blocks of about that size in total for the gather/scatter/alltoall
// collectives), default and small chunk sizes, in place and not.

std::vector<AlgoParam> dataAlgorithms() {
  std::vector<AlgoParam> out;
  for (const AlgoParam& p : allAlgorithms()) {
    if (p.coll != Collective::kBarrier) out.push_back(p);
  }
  return out;
}

class AlgorithmsLarge : public testing::TestWithParam<AlgoParam> {};

TEST_P(AlgorithmsLarge, MillionElements) {
  const AlgoParam p = GetParam();
  const size_t big = (size_t{1} << 20) + 3;
  int k = 0;
  for (int n : {5, 8}) {
    Case c;
    c.algo = p.name;
    c.coll = p.coll;
    c.nranks = n;
    const bool perRank = p.coll == Collective::kAllGather || p.coll == Collective::kReduceScatter ||
                         p.coll == Collective::kAlltoAll || p.coll == Collective::kAlltoAllv;
    c.count = perRank ? big / n : big;
    if (p.coll == Collective::kAlltoAllv) c.count = big / n / n * 2;  // max per-peer count
    c.dtype = n == 5 ? ternFloat32 : ternBfloat16;
    c.op = n == 5 ? ternSum : ternAvg;
    c.root = n - 2;
    c.inPlace = n == 8;
    c.runs = 1;
    if (n == 8) c.options.pipelineChunkBytes = 64 * 1024;
    if (std::string(p.name) == "hier") {
      for (int r = 0; r < n; ++r) c.options.hostOf.push_back(r / 3);
    }
    c.dataSeed = static_cast<uint64_t>(++k + 100);
    EXPECT_CASE(c);
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, AlgorithmsLarge, testing::ValuesIn(dataAlgorithms()), paramName);

TEST(AlgorithmsLargeRing, SixteenRanksInPlaceAverage) {
  Case c;
  c.algo = "ring";
  c.coll = Collective::kAllReduce;
  c.nranks = 16;
  c.count = (size_t{1} << 20) + 3;
  c.dtype = ternFloat32;
  c.op = ternAvg;
  c.noisy = true;
  c.inPlace = true;
  c.runs = 2;
  c.options.pipelineChunkBytes = 32 * 1024;
  EXPECT_CASE(c);
}

// ---------------------------------------------------------------------------------------------------------------
// Hierarchical algorithms on many host layouts: even and uneven nodes, interleaved ranks, single-rank nodes.

TEST(AlgorithmsHier, HostLayouts) {
  const std::vector<std::vector<int>> layouts = {
      {0, 0, 1, 1},
      {0, 0, 0, 1, 1, 1, 2, 2},
      {0, 1, 0, 1},
      {0, 0, 0, 0, 1},
      {0, 1, 2, 3},
      {3, 3, 3},
      {0, 0, 1, 1, 1, 1, 2},
      {1, 0, 0, 2, 1, 2, 0, 1, 2, 3},
      {5, 5, 9, 9, 9, 9, 9, 7, 7, 7, 5},
      {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3},
      {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3},
  };
  const std::pair<ternDataType_t, ternRedOp_t> types[] = {
      {ternFloat32, ternSum}, {ternInt32, ternAvg}, {ternBfloat16, ternMax}, {ternUint8, ternProd}};
  int k = 0;
  for (const auto& hosts : layouts) {
    for (Collective coll : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter}) {
      for (size_t count : {0, 1, 7, 1023}) {
        for (int inPlace = 0; inPlace < 2; ++inPlace) {
          Case c;
          c.algo = "hier";
          c.coll = coll;
          c.nranks = static_cast<int>(hosts.size());
          c.count = count;
          c.dtype = types[k % 4].first;
          c.op = types[k % 4].second;
          c.inPlace = inPlace != 0;
          c.options.hostOf = hosts;
          c.options.pipelineChunkBytes = (k % 3 == 0) ? 64 : 512 * 1024;
          c.dataSeed = static_cast<uint64_t>(++k);
          EXPECT_CASE(c);
        }
      }
    }
  }
}

TEST(AlgorithmsHier, InterNodeTrafficCrossesOncePerNode) {
  // 2 nodes x 4 ranks, allreduce of 4096 floats: each rank sends 2 (N-1)/N of its slice (1024 floats) across.
  const int n = 8;
  BuildOptions o;
  o.hostOf = {0, 0, 0, 0, 1, 1, 1, 1};
  CollArgs a;
  a.count = 4096;
  size_t cross = 0;
  for (int r = 0; r < n; ++r) {
    Schedule s = buildHierAllReduce(a, r, n, o);
    for (const Step& st : s.steps) {
      if (st.kind == StepKind::kSend && o.hostOf[st.peer] != o.hostOf[r]) cross += st.src.bytes;
    }
  }
  // Node 0 -> node 1 and back: each slice of 1024 floats crosses once each way in RS and once in AG halves.
  EXPECT_EQ(cross, size_t{4096} * 4 * 2);
}

TEST(AlgorithmsHier, TwoNodesShipTheirPartialWithoutWaitingForTheOtherNode) {
  // With two nodes, a node whose ranks are ready early must be able to send everything it sends across before the
  // other node has sent anything: no inter-node send may depend (transitively) on an inter-node receive.
  for (const std::vector<int>& hosts : {std::vector<int>{0, 0, 1, 1}, std::vector<int>{0, 1}, {0, 0, 0, 1, 1}}) {
    const int n = static_cast<int>(hosts.size());
    BuildOptions o;
    o.hostOf = hosts;
    o.pipelineChunkBytes = 1024;  // several chunks per slice
    CollArgs a;
    a.count = 10000;
    a.op = ternAvg;
    for (int r = 0; r < n; ++r) {
      const Schedule s = buildHierAllReduce(a, r, n, o);
      std::vector<bool> afterRemoteRecv(s.steps.size(), false);
      size_t crossSends = 0;
      for (size_t i = 0; i < s.steps.size(); ++i) {
        const Step& st = s.steps[i];
        bool tainted = false;
        for (uint32_t d : st.deps) tainted = tainted || afterRemoteRecv[d];
        const bool remote = st.peer >= 0 && hosts[st.peer] != hosts[r];
        if (st.kind == StepKind::kSend && remote) {
          ++crossSends;
          EXPECT_FALSE(tainted) << "rank " << r << " step " << i << ": an inter-node send waits for the other node";
        }
        afterRemoteRecv[i] = tainted || (st.kind == StepKind::kRecv && remote);
      }
      EXPECT_GT(crossSends, 1u) << "rank " << r;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Ring orders (rank permutations chosen from the topology) for every algorithm that walks a ring or chain.

TEST(AlgorithmsRingOrder, Permutations) {
  const std::vector<std::pair<Collective, const char*>> algos = {
      {Collective::kAllReduce, "ring"},     {Collective::kAllReduce, "tree"},
      {Collective::kAllReduce, "dbtree"},   {Collective::kAllReduce, "hier"},
      {Collective::kAllGather, "ring"},     {Collective::kAllGather, "hier"},
      {Collective::kReduceScatter, "ring"}, {Collective::kReduceScatter, "hier"},
      {Collective::kBroadcast, "chain"},    {Collective::kBroadcast, "scatter_allgather"},
      {Collective::kReduce, "chain"}};
  std::mt19937_64 g(42);
  int k = 0;
  for (int n : {2, 5, 8, 13}) {
    for (int variant = 0; variant < 2; ++variant) {
      std::vector<int> order(n);
      std::iota(order.begin(), order.end(), 0);
      if (variant == 0) {
        std::reverse(order.begin(), order.end());
      } else {
        std::shuffle(order.begin(), order.end(), g);
      }
      for (const auto& [coll, name] : algos) {
        for (size_t count : {7, 1023}) {
          Case c;
          c.algo = name;
          c.coll = coll;
          c.nranks = n;
          c.count = count;
          c.dtype = ternInt32;
          c.op = k % 2 ? ternSum : ternMin;
          c.root = k % n;
          c.inPlace = k % 3 == 0;
          c.options.ringOrder = order;
          c.options.pipelineChunkBytes = 128;
          if (std::string(name) == "hier") {
            for (int r = 0; r < n; ++r) c.options.hostOf.push_back(r % 2);
          }
          c.dataSeed = static_cast<uint64_t>(++k);
          EXPECT_CASE(c);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Alltoallv with many random count/displacement layouts (zero counts, gaps, shuffled block order).

TEST(AlgorithmsAlltoAllv, RandomLayouts) {
  int k = 0;
  for (int n = 1; n <= 9; ++n) {
    for (size_t maxCount : {0, 1, 5, 40}) {
      for (int inPlace = 0; inPlace < 2; ++inPlace) {
        Case c;
        c.algo = "pairwise";
        c.coll = Collective::kAlltoAllv;
        c.nranks = n;
        c.count = maxCount;
        c.dtype = kAllTypes[k % 10];
        c.inPlace = inPlace != 0;
        c.dataSeed = static_cast<uint64_t>(++k);
        c.runs = 4;
        EXPECT_CASE(c);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Point-to-point groups.

TEST(AlgorithmsPointToPoint, GroupsRunTogether) {
  // Every rank sends a different amount to every other rank and to itself, receiving in the opposite order of the
  // peers' sends; all within one group, so nothing may wait for anything.
  const int n = 5;
  std::vector<Schedule> schedules;
  std::vector<sim::RankBuffers> bufs(n);
  auto bytes = [](int a, int b) { return static_cast<size_t>(4 * (1 + a + 2 * b)); };
  std::vector<std::vector<size_t>> sendOff(n, std::vector<size_t>(n)), recvOff(n, std::vector<size_t>(n));
  for (int r = 0; r < n; ++r) {
    CollArgs a;
    a.coll = Collective::kPointToPoint;
    a.dtype = ternUint8;
    size_t in = 0, out = 0;
    for (int q = n - 1; q >= 0; --q) {
      sendOff[r][q] = in;
      a.p2p.push_back({true, q, in, bytes(r, q)});
      in += bytes(r, q);
    }
    for (int q = 0; q < n; ++q) {
      recvOff[r][q] = out;
      a.p2p.push_back({false, q, out, bytes(q, r)});
      out += bytes(q, r);
    }
    schedules.push_back(buildDirectPointToPoint(a, r, n, BuildOptions{}));
    sim::RankBuffers& b = bufs[r];
    b.hasInput = b.hasOutput = true;
    b.inputBytes = in;
    b.outputOffset = in;
    b.outputBytes = out;
    b.arena.assign(in + out, 0);
    b.defined.assign(in + out, 0);
    for (size_t i = 0; i < in; ++i) {
      b.arena[i] = static_cast<uint8_t>(r * 37 + i);
      b.defined[i] = 1;
    }
  }
  for (bool rendezvous : {false, true}) {
    std::vector<sim::RankBuffers> run = bufs;
    sim::SimOptions so;
    so.dtype = ternUint8;
    so.rendezvous = rendezvous;
    sim::SimResult res = sim::simulate(schedules, run, so);
    ASSERT_TRUE(res.ok()) << res.error;
    for (int r = 0; r < n; ++r) {
      for (int q = 0; q < n; ++q) {
        for (size_t i = 0; i < bytes(q, r); ++i) {
          ASSERT_EQ(run[r].arena[run[r].outputOffset + recvOff[r][q] + i],
                    static_cast<uint8_t>(q * 37 + sendOff[q][r] + i));
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Pipelining: scratch does not grow with the message, and chunks really are in flight together.

size_t scratchOf(ScheduleBuilderFn fn, Collective coll, size_t count, int n, size_t chunkBytes) {
  CollArgs a;
  a.coll = coll;
  a.count = count;
  BuildOptions o;
  o.pipelineChunkBytes = chunkBytes;
  size_t m = 0;
  for (int r = 0; r < n; ++r) m = std::max(m, fn(a, r, n, o).scratchBytes);
  return m;
}

TEST(AlgorithmsPipelining, ScratchIsBoundedByChunksInFlight) {
  const size_t chunk = 64 * 1024;
  for (size_t count : {size_t{1} << 20, size_t{1} << 23}) {
    EXPECT_LE(scratchOf(buildRingAllReduce, Collective::kAllReduce, count, 6, chunk), 4 * chunk);
    EXPECT_LE(scratchOf(buildRingReduceScatter, Collective::kReduceScatter, count / 6, 6, chunk), 9 * chunk);
    EXPECT_LE(scratchOf(buildChainReduce, Collective::kReduce, count, 6, chunk), 4 * chunk);
    EXPECT_LE(scratchOf(buildTreeAllReduce, Collective::kAllReduce, count, 7, chunk), 8 * chunk);
    EXPECT_LE(scratchOf(buildDoubleTreeAllReduce, Collective::kAllReduce, count, 7, chunk), 16 * chunk);
    EXPECT_LE(scratchOf(buildBinomialReduce, Collective::kReduce, count, 7, chunk), 16 * chunk);
    EXPECT_LE(scratchOf(buildRabenseifnerAllReduce, Collective::kAllReduce, count, 8, chunk), 4 * chunk);
    EXPECT_LE(scratchOf(buildRecursiveDoublingAllReduce, Collective::kAllReduce, count, 6, chunk), 4 * chunk);
    CollArgs a;
    a.coll = Collective::kAlltoAll;
    a.count = count / 8;
    a.inPlace = true;
    BuildOptions o;
    o.pipelineChunkBytes = chunk;
    EXPECT_LE(buildPairwiseAlltoAll(a, 3, 8, o).scratchBytes, 8 * chunk);
  }
  EXPECT_EQ(scratchOf(buildChainBroadcast, Collective::kBroadcast, 1 << 20, 6, chunk), 0u);
  EXPECT_EQ(scratchOf(buildRingAllGather, Collective::kAllGather, 1 << 20, 6, chunk), 0u);
}

TEST(AlgorithmsPipelining, TinyChunks) {
  // Chunks of one element (or a few): hundreds of messages per rank, every window/slot path exercised.
  int k = 0;
  for (const AlgoParam& p : allAlgorithms()) {
    for (int n : {3, 6, 9}) {
      for (size_t chunkBytes : {1, 12}) {
        Case c;
        c.algo = p.name;
        c.coll = p.coll;
        c.nranks = n;
        c.count = 37;
        c.dtype = k % 2 ? ternFloat32 : ternInt64;
        c.op = kAllOps[k % 5];
        c.root = k % n;
        c.inPlace = k % 3 == 1;
        c.options.pipelineChunkBytes = chunkBytes;
        if (std::string(p.name) == "hier")
          c.options.hostOf = n == 3 ? std::vector<int>{0, 1, 1} : std::vector<int>(n, 0);
        if (std::string(p.name) == "hier" && n == 9) c.options.hostOf = {0, 0, 0, 0, 1, 1, 2, 2, 2};
        c.dataSeed = static_cast<uint64_t>(++k);
        EXPECT_CASE(c);
      }
    }
  }
}

// Simple timing model: every message takes 1 time unit per chunk of bytes on its link (links are serial, one per
// direction and pair), local steps take no time. A pipelined chain/tree then finishes in about
// (hops + chunks - 1) units; a store-and-forward one would need hops x chunks.
double makespan(const std::vector<Schedule>& s, size_t unitBytes) {
  const int n = static_cast<int>(s.size());
  struct Msg {
    double ready = -1, arrive = -1;
  };
  std::vector<std::vector<double>> done(n), start(n);
  for (int r = 0; r < n; ++r) {
    done[r].assign(s[r].steps.size(), -1);
    start[r].assign(s[r].steps.size(), -1);
  }
  // Fixed-point relaxation over the whole DAG (deps, FIFO start order, message matching, link serialization).
  std::vector<std::vector<std::vector<uint32_t>>> sends(n, std::vector<std::vector<uint32_t>>(n)),
      recvs(n, std::vector<std::vector<uint32_t>>(n));
  std::vector<std::vector<size_t>> kOf(n);
  for (int r = 0; r < n; ++r) {
    kOf[r].assign(s[r].steps.size(), 0);
    for (uint32_t i = 0; i < s[r].steps.size(); ++i) {
      const Step& st = s[r].steps[i];
      if (st.kind == StepKind::kSend) {
        kOf[r][i] = sends[r][st.peer].size();
        sends[r][st.peer].push_back(i);
      } else if (st.kind == StepKind::kRecv) {
        kOf[r][i] = recvs[r][st.peer].size();
        recvs[r][st.peer].push_back(i);
      }
    }
  }
  std::vector<std::vector<double>> arrive(n * n);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) arrive[a * n + b].assign(sends[a][b].size(), -1);
  }
  bool changed = true;
  int rounds = 0;
  while (changed && rounds++ < 100000) {
    changed = false;
    for (int r = 0; r < n; ++r) {
      for (uint32_t i = 0; i < s[r].steps.size(); ++i) {
        if (done[r][i] >= 0) continue;
        const Step& st = s[r].steps[i];
        double t = 0;
        bool ok = true;
        for (uint32_t d : st.deps) {
          if (done[r][d] < 0) ok = false;
          t = std::max(t, done[r][d]);
        }
        if (!ok) continue;
        const size_t k = kOf[r][i];
        if (st.kind == StepKind::kSend) {
          if (k > 0) {
            const double prev = start[r][sends[r][st.peer][k - 1]];
            if (prev < 0) continue;
            t = std::max(t, prev);
          }
          double linkFree = k > 0 ? arrive[r * n + st.peer][k - 1] : 0;
          if (linkFree < 0) continue;
          start[r][i] = t;
          const double a = std::max(t, linkFree) + static_cast<double>(st.src.bytes) / unitBytes;
          arrive[r * n + st.peer][k] = a;
          done[r][i] = a;
          changed = true;
        } else if (st.kind == StepKind::kRecv) {
          if (k > 0) {
            const double prev = start[r][recvs[r][st.peer][k - 1]];
            if (prev < 0) continue;
            t = std::max(t, prev);
          }
          const double a = arrive[st.peer * n + r][k];
          if (a < 0) continue;
          start[r][i] = t;
          done[r][i] = std::max(t, a);
          changed = true;
        } else {
          start[r][i] = done[r][i] = t;
          changed = true;
        }
      }
    }
  }
  double m = 0;
  for (int r = 0; r < n; ++r) {
    for (double d : done[r]) {
      if (d < 0) return -1;
      m = std::max(m, d);
    }
  }
  return m;
}

std::vector<Schedule> buildAll(ScheduleBuilderFn fn, const CollArgs& a, int n, const BuildOptions& o) {
  std::vector<Schedule> out;
  for (int r = 0; r < n; ++r) out.push_back(fn(a, r, n, o));
  return out;
}

TEST(AlgorithmsPipelining, ChunksOverlapAcrossHops) {
  const int n = 8;
  const size_t chunkBytes = 1024, chunks = 32;
  CollArgs a;
  a.count = chunks * chunkBytes / 4;
  BuildOptions o;
  o.pipelineChunkBytes = chunkBytes;
  const double c = static_cast<double>(chunks);
  // Chain: (n-1) hops + (chunks-1) chunk times, instead of (n-1) x chunks.
  a.coll = Collective::kBroadcast;
  EXPECT_LE(makespan(buildAll(buildChainBroadcast, a, n, o), chunkBytes), (n - 1) + c - 1 + 0.01);
  a.coll = Collective::kReduce;
  EXPECT_LE(makespan(buildAll(buildChainReduce, a, n, o), chunkBytes), (n - 1) + c - 1 + 0.01);
  // Binomial broadcast: the root feeds log2(n) children from one link each; pipelined, well below log2(n) x chunks
  // store-and-forward per level.
  a.coll = Collective::kBroadcast;
  EXPECT_LE(makespan(buildAll(buildBinomialBroadcast, a, n, o), chunkBytes), c + 3 + 0.01);
  // Ring allreduce: 2(n-1) steps of one block each; the bandwidth bound is 2(n-1)/n x the buffer per link.
  a.coll = Collective::kAllReduce;
  const double bound = 2.0 * (n - 1) / n * c;
  EXPECT_LE(makespan(buildAll(buildRingAllReduce, a, n, o), chunkBytes), bound * 1.1);
  // Trees move the whole buffer up and down; pipelined, about 2 x chunks plus the depth, not depth x chunks.
  const double tree = makespan(buildAll(buildTreeAllReduce, a, n, o), chunkBytes);
  EXPECT_GT(tree, 0);
  EXPECT_LE(tree, 3 * c + 2 * 4);
  const double dbtree = makespan(buildAll(buildDoubleTreeAllReduce, a, n, o), chunkBytes);
  EXPECT_GT(dbtree, 0);
  EXPECT_LT(dbtree, tree);
}

// ---------------------------------------------------------------------------------------------------------------
// The simulator itself: it must catch every class of broken schedule.

Case ringCase() {
  Case c;
  c.algo = "ring";
  c.coll = Collective::kAllReduce;
  c.nranks = 4;
  c.count = 1023;
  c.options.pipelineChunkBytes = 256;
  return c;
}

TEST(AlgorithmsSimulator, CatchesAMissingDependency) {
  Case c = ringCase();
  c.mutate = [](std::vector<Schedule>& s) {
    for (Step& st : s[1].steps) {
      if (st.kind == StepKind::kReduce && !st.deps.empty()) {
        st.deps.clear();
        break;
      }
    }
  };
  EXPECT_NE(runCase(c).find("hazard"), std::string::npos);
  c.hazardCheck = false;  // the dynamic run alone notices too (reads of bytes not yet received)
  c.runs = 6;
  EXPECT_NE(runCase(c), "");
}

TEST(AlgorithmsSimulator, CatchesSizeAndCountMismatches) {
  Case c = ringCase();
  c.mutate = [](std::vector<Schedule>& s) {
    for (Step& st : s[2].steps) {
      if (st.kind == StepKind::kSend) {
        st.src.bytes -= 4;
        break;
      }
    }
  };
  EXPECT_NE(runCase(c).find("bytes sent"), std::string::npos);
  c.mutate = [](std::vector<Schedule>& s) {
    for (Step& st : s[2].steps) {
      if (st.kind == StepKind::kSend) {
        st = Step{StepKind::kFinalize, -1, st.src, {}, {}, st.deps};  // a send turned into a local step
        st.dst.buffer = BufferId::kOutput;
        break;
      }
    }
  };
  EXPECT_NE(runCase(c).find("messages"), std::string::npos);
}

TEST(AlgorithmsSimulator, CatchesWrongResults) {
  Case c = ringCase();
  c.op = ternAvg;
  c.mutate = [](std::vector<Schedule>& s) {
    for (Step& st : s[3].steps) {
      if (st.kind == StepKind::kFinalize) st = Step{StepKind::kCopy, -1, st.dst, st.dst, {}, st.deps};
    }
  };
  EXPECT_NE(runCase(c).find("expected"), std::string::npos);
}

std::vector<sim::RankBuffers> emptyBuffers(int n, size_t bytes) {
  std::vector<sim::RankBuffers> b(n);
  for (auto& x : b) {
    x.hasInput = x.hasOutput = true;
    x.inputBytes = bytes;
    x.outputOffset = bytes;
    x.outputBytes = bytes;
    x.arena.assign(2 * bytes, 0);
    x.defined.assign(2 * bytes, 0);
    std::fill(x.defined.begin(), x.defined.begin() + bytes, 1);
  }
  return b;
}

TEST(AlgorithmsSimulator, CatchesDeadlocks) {
  // Both ranks receive first and send only afterwards: deadlock with any transport.
  std::vector<Schedule> s(2);
  for (int r = 0; r < 2; ++r) {
    ScheduleBuilder b("test");
    uint32_t rv = b.recv(1 - r, outputSpan(0, 8));
    b.send(1 - r, inputSpan(0, 8), {rv});
    s[r] = b.take();
  }
  auto bufs = emptyBuffers(2, 8);
  EXPECT_NE(sim::simulate(s, bufs, {}).error.find("deadlock"), std::string::npos);
  // Both send first and receive after their send completed: fine if sends complete on their own (eager), a
  // deadlock if a send completes only once the peer posted its receive (rendezvous).
  for (int r = 0; r < 2; ++r) {
    ScheduleBuilder b("test");
    uint32_t sd = b.send(1 - r, inputSpan(0, 8));
    b.recv(1 - r, outputSpan(0, 8), {sd});
    s[r] = b.take();
  }
  bufs = emptyBuffers(2, 8);
  EXPECT_TRUE(sim::simulate(s, bufs, {}).ok());
  sim::SimOptions rv;
  rv.rendezvous = true;
  bufs = emptyBuffers(2, 8);
  EXPECT_NE(sim::simulate(s, bufs, rv).error.find("deadlock"), std::string::npos);
}

TEST(AlgorithmsSimulator, CatchesBadMemoryUse) {
  auto run = [](std::function<void(ScheduleBuilder&)> body, bool noOutput = false) {
    std::vector<Schedule> s(1);
    ScheduleBuilder b("test");
    body(b);
    b.needScratch(64);
    s[0] = b.take();
    auto bufs = emptyBuffers(1, 16);
    if (noOutput) bufs[0].hasOutput = false;
    return sim::simulate(s, bufs, {}).error;
  };
  EXPECT_NE(run([](ScheduleBuilder& b) { b.copy(outputSpan(0, 8), scratchSpan(0, 8)); }).find("uninitialized"),
            std::string::npos);
  EXPECT_NE(run([](ScheduleBuilder& b) { b.copy(outputSpan(0, 8), outputSpan(8, 8)); }).find("uninitialized"),
            std::string::npos);
  EXPECT_NE(run([](ScheduleBuilder& b) { b.copy(inputSpan(0, 8), outputSpan(0, 8)); }).find("writes the input"),
            std::string::npos);
  EXPECT_NE(run([](ScheduleBuilder& b) { b.copy(outputSpan(0, 8), inputSpan(0, 8)); }, true).find("does not have"),
            std::string::npos);
  EXPECT_NE(run([](ScheduleBuilder& b) { b.copy(outputSpan(12, 8), inputSpan(0, 8)); }).find("outside"),
            std::string::npos);
  EXPECT_NE(run([](ScheduleBuilder& b) { b.copy(outputSpan(2, 4), inputSpan(0, 4)); }).find("aligned"),
            std::string::npos);
  EXPECT_NE(run([](ScheduleBuilder& b) {
              b.copy(outputSpan(0, 16), inputSpan(0, 16));
              b.reduce(outputSpan(4, 8), outputSpan(0, 8), inputSpan(0, 8));
            }).find("partially overlaps"),
            std::string::npos);
  EXPECT_EQ(run([](ScheduleBuilder& b) {
              uint32_t c = b.copy(outputSpan(0, 16), inputSpan(0, 16));
              b.reduce(outputSpan(0, 8), outputSpan(0, 8), inputSpan(0, 8), {c});
            }),
            "");
}

}  // namespace
}  // namespace tern
