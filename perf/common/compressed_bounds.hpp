// Error bounds of tern's compressed collectives against the TRUE result (the exact, rank-order sum of the
// inputs, in double), derived from each codec's definition (docs/COMPRESSION.md, "Error bounds"), and the check
// data they are stated for. Used by the perf binaries' -c 1 check of -Z runs and by the unit tests. Header-only,
// on the public enums alone: nothing here calls the library (no codec, no conversion kernel), so a bug shared by
// a codec and its check cannot hide.
//
// What is checked: a collective is called K = checkCalls() times on the same inputs with a FRESH compressor (zero
// error-feedback state); the mean of the K results must lie within elementTolerance() of the true result, element
// by element. Why K calls: error feedback keeps what a call did not deliver in a residual and adds it to the next
// call's input, so over K calls on constant inputs the decoded results telescope,
//
//     sum_k R_k = K S - (sum_p r_p,K + r_server,K)          (r_p: worker residuals, r_server: the server's),
//
// and the mean differs from S by the final residuals / K (plus fp32 rounding of each call). The residuals stay
// bounded for a working codec, so the mean converges to S; a codec that returns zeros, a dropped rank's payload
// or a server that skips its error feedback leaves an error that does not shrink with K. K is chosen per codec so
// that the bound is below the smallest error those failures leave on the check data (an input magnitude).
//
// Check data (checkValue) per codec family, chosen so that each bound is meaningful:
//  - fp16/bf16: small integers in [-4, 4]: every input, partial sum and result is exact in fp16 and bf16, so the
//    bound is 0 and the check is exact (elementTolerance also covers any other data: rounding of each stage).
//  - sign, QSGD: every element of every rank is +-1 ("two-level" data): half of the elements have the same sign
//    on every rank (sum +-n), the others are balanced (sum 0, or +-1 for odd n). A worker's chunk then has one
//    magnitude, which the sign codec (scale = mean |x| or rms = 1) and QSGD (level = max) encode exactly, so the
//    workers' residuals stay 0; the server re-encodes two-level sums, a lossy step whose error feedback matters.
//  - Top-K: sparse data: element j belongs to at most one rank (each rank holds about 2 k nonzeros of magnitude
//    in [1, 2), distinct values), so every element's sum is one rank's value, and an element waits a few calls
//    for its turn. Equal magnitudes are avoided on purpose: sampled Top-K keeps threshold ties in index order, so
//    with many equal keys it can pass over the same high-index elements on every call (see the report of
//    issue 14); distinct magnitudes are what gradients look like.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tern/tern.h"

namespace tern::compressed_check {

enum class Family { kCast, kQsgd, kSign, kTopK };

// A codec spec parsed here from its documented syntax (sign[:rms], qsgd:BITS[:BUCKET],
// topk:RATIO[:exact|:sampled][:fp16|:fp32], fp16|half, bf16|bfloat16), independently of the library's parser.
struct Codec {
  Family family = Family::kCast;
  bool bf16 = false;        // kCast: bf16 rather than fp16
  int qsgdLevels = 7;       // kQsgd: s = 2^(BITS-1) - 1
  double topkRatio = 0.01;  // kTopK: k = round(ratio * n), at least 1
  bool topkExact = false;   // kTopK: exact selection (else sampled)
  bool topkFp16 = false;    // kTopK: values sent as fp16
};

inline Codec parseCodec(const std::string& spec) {
  std::vector<std::string> parts(1);
  for (char c : spec) {
    if (c == ':') {
      parts.emplace_back();
    } else {
      parts.back() += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  Codec c;
  const std::string& name = parts[0];
  if (name == "fp16" || name == "half" || name == "bf16" || name == "bfloat16") {
    c.family = Family::kCast;
    c.bf16 = name[0] == 'b';
  } else if (name == "sign") {
    c.family = Family::kSign;
  } else if (name == "qsgd") {
    c.family = Family::kQsgd;
    const int bits = parts.size() > 1 ? std::stoi(parts[1]) : 4;
    c.qsgdLevels = (1 << (bits - 1)) - 1;
  } else if (name == "topk") {
    c.family = Family::kTopK;
    if (parts.size() > 1) c.topkRatio = std::stod(parts[1]);
    for (size_t i = 2; i < parts.size(); ++i) {
      if (parts[i] == "exact") c.topkExact = true;
      if (parts[i] == "fp16") c.topkFp16 = true;
    }
  } else {
    throw std::invalid_argument("compressed_check: unknown codec '" + spec + "'");
  }
  return c;
}

// ---- check data ---------------------------------------------------------------------------------------------

inline uint64_t mix(uint64_t z) {  // splitmix64 finalizer: a fixed, well-spread hash of an element index
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Two-level data: +-1 everywhere; element j agrees on every group (sum +-groups) or is balanced (sum 0, or +-1).
// `group` is the rank (or, for compressed_hier, the node: the ranks of a node hold the same values).
inline double twoLevelValue(int group, int groups, uint64_t j) {
  const uint64_t h = mix(j);
  const double sign = (h & 2) ? 1.0 : -1.0;
  if (h & 1) return sign;
  return group < (groups + 1) / 2 ? sign : -sign;
}

// Ranks among which element j's owner is drawn: about 2 k nonzeros per rank, but at least one slot per rank.
inline uint64_t sparseSlots(double ratio, int ranks) {
  const auto slots = static_cast<uint64_t>(std::ceil(1.0 / (2.0 * ratio)));
  return std::max<uint64_t>(slots, static_cast<uint64_t>(ranks));
}

// Sparse data: rank `rank` holds +-(1 + m/1024) at the elements it owns, 0 elsewhere (exact in fp16 and bf16).
inline double sparseValue(int rank, int ranks, double ratio, uint64_t j) {
  const uint64_t h = mix(j ^ 0x5bd1e995ull);
  if (h % sparseSlots(ratio, ranks) != static_cast<uint64_t>(rank)) return 0.0;
  const double magnitude = 1.0 + static_cast<double>((h >> 32) % 1024) / 1024.0;
  return (h >> 42) & 1 ? magnitude : -magnitude;
}

// Small integers in [-4, 4].
inline double smallIntegerValue(int rank, uint64_t j) {
  return static_cast<double>((7 * static_cast<uint64_t>(rank) + 13 * j + 3) % 9) - 4.0;
}

// The value rank `rank` of `ranks` puts at global element j of its input, for this codec.
inline double checkValue(const Codec& c, int rank, int ranks, uint64_t j) {
  switch (c.family) {
    case Family::kCast:
      return smallIntegerValue(rank, j);
    case Family::kTopK:
      return sparseValue(rank, ranks, c.topkRatio, j);
    default:
      return twoLevelValue(rank, ranks, j);
  }
}

// ---- calls --------------------------------------------------------------------------------------------------

// Residual factors of the codecs whose residual has no small worst-case bound (see elementTolerance). They are
// about 2.5x (sign) and 2x (Top-K) the largest residual seen on this file's check data for 1-8 ranks, chunks of
// 10^2-10^6 elements and up to 256 calls (sign: 0.82 max|y|; Top-K: 2 max|x|, sampled and exact).
inline constexpr double kSignResidualFactor = 2.0;
inline constexpr double kTopkResidualFactor = 4.0;

// How many calls the check averages: enough that the bound on the mean error falls below the smallest error a
// lost contribution leaves on the check data (1: every input element is +-1, or at least 1 for Top-K).
inline int checkCalls(const Codec& c, int ranks) {
  switch (c.family) {
    case Family::kCast:
      return 1;  // exact per call on the check data; nothing to average
    case Family::kQsgd:
      return c.qsgdLevels >= 2 ? 16 : 1;  // 1 level: the residual does not contract (bound is per call)
    case Family::kSign:
      return 4 * ranks + 8;  // residual <= 2 max|sum| = 2 n, and 2n / (4n + 8) < 1/2
    case Family::kTopK:
      return 16;  // residual <= 4 max|x| < 8, and 8 / 16 = 1/2
  }
  return 1;
}

// ---- rounding helpers (in double, exact) ------------------------------------------------------------------

struct FloatFormat {
  int fractionBits;  // 10 fp16, 7 bf16, 23 fp32
  int minExponent;   // of the smallest normal: -14 fp16, -126 bf16/fp32
  double maxFinite;
};
inline constexpr FloatFormat kFp16{10, -14, 65504.0};
inline constexpr FloatFormat kBf16{7, -126, 3.3895313892515355e38};
inline constexpr FloatFormat kFp32{23, -126, 3.4028234663852886e38};

// x rounded to nearest even in the format (inf past the largest finite value).
inline double roundTo(double x, const FloatFormat& f) {
  if (x == 0.0 || !std::isfinite(x)) return x;
  int e = std::ilogb(x);
  e = std::max(e, f.minExponent);
  const double q = std::ldexp(std::nearbyint(std::ldexp(x, f.fractionBits - e)), e - f.fractionBits);
  return std::fabs(q) > f.maxFinite ? std::copysign(INFINITY, x) : q;
}
inline bool representable(double x, const FloatFormat& f) { return roundTo(x, f) == x; }
// Largest rounding error at magnitude <= m: half an ulp relative, or half the subnormal spacing.
inline double roundingBound(double m, const FloatFormat& f) {
  return std::ldexp(m, -f.fractionBits - 1) + std::ldexp(1.0, f.minExponent - f.fractionBits - 1);
}
inline const FloatFormat* formatOf(ternDataType_t t) {
  return t == ternFloat16 ? &kFp16 : t == ternBfloat16 ? &kBf16 : nullptr;
}

// ---- the bound ------------------------------------------------------------------------------------------------

// How the collective combines the inputs.
struct Shape {
  int ranks = 1;                       // n (the divisor of an average)
  bool average = false;                // op avg: the sum is divided by n once, in fp32
  bool serverStage = false;            // two-phase allreduce / compressed_hier: the sum is re-encoded (server EF)
  ternDataType_t dtype = ternFloat32;  // of input and output (fp16/bf16 outputs are rounded from fp32)
};

// Whole-tensor magnitudes of the check's inputs (every bound is per element but may depend on a bucket's or
// chunk's maximum, and the check does not depend on how the library cuts the tensor: whole-tensor maxima bound
// every bucket's).
struct Magnitudes {
  std::vector<double> maxAbsInput;  // per contributing payload p: max_j |x_p[j]|
  double maxAbsSum = 0;             // max_j |sum_p x_p[j]| (before the average)
};

// Bound on |mean of `calls` results - true result| at one element whose contributions (one per payload, in rank
// order) are x[0..count). Derivations (u = 2^-24, fp32's unit roundoff):
//  - fp16/bf16 (one call): each worker value rounds once (0 if representable), the fp32 sum of the decoded values
//    is exact when every rank-order partial sum is representable (else (c-1) u sum|w|), the average divides once,
//    the server rounds the sum once more, an fp16/bf16 output rounds once more. Exact on small integers.
//  - QSGD, s = 2^(B-1)-1 levels: a stochastic rounding lands on a level next to |v|, so |Q(v) - v| < step =
//    max_bucket |v| / s; with error feedback v = x + r, so max|r| <= (M + max|r|)/s, i.e. |r| <= M/(s-1) for
//    s >= 2 (M: max |x|). The server's input is S plus the workers' residual differences, so its M is at most
//    max|S| + 2 sum_p M_p/(s-1). Over K calls the mean is off by (sum_p r_p + r_server)/K. With s = 1 the
//    residual does not contract: one call, each stage off by less than its max.
//  - sign: valid for the two-level check data (one magnitude per rank): the worker's scale equals that magnitude,
//    so workers are exact and keep a zero residual; the server's residual is at most kSignResidualFactor times
//    max|S| (measured, with margin: sign's residual has no useful worst-case bound, the scale being one number
//    for a whole chunk).
//  - Top-K: valid for the sparse check data (one contributing rank per element): a kept element's residual is 0
//    (fp16 values: its rounding), an unsent one's is its accumulated value, at most kTopkResidualFactor max|x|
//    (measured, with margin) before its turn comes.
//  Every call adds fp32 rounding (v = x + r, r = v - d, the sum and the average): a few u of the magnitudes.
inline double elementTolerance(const Codec& codec, const Shape& shape, const Magnitudes& mag, const double* x,
                               int count, int calls) {
  const double u = std::ldexp(1.0, -24);
  const double div = shape.average ? static_cast<double>(shape.ranks) : 1.0;
  const FloatFormat* out = formatOf(shape.dtype);
  double sumAbsMax = 0;
  for (double m : mag.maxAbsInput) sumAbsMax += m;
  if (codec.family == Family::kCast) {
    const FloatFormat& fmt = codec.bf16 ? kBf16 : kFp16;
    double err = 0, sum = 0, absSum = 0;
    bool exact = true;
    for (int p = 0; p < count; ++p) {
      const double w = roundTo(x[p], fmt);
      err += std::fabs(w - x[p]);
      sum += w;
      absSum += std::fabs(w);
      exact = exact && representable(sum, kFp32);
    }
    if (!exact) err += (count - 1) * u * absSum * (1 + 1e-6);
    double y = sum / div;
    err /= div;
    if (shape.average && !(exact && representable(y, kFp32))) {
      err += roundingBound(std::fabs(y) + err, kFp32);
      exact = false;
    }
    auto stage = [&](const FloatFormat& f) {
      if (exact) {
        const double r = roundTo(y, f);
        err += std::fabs(r - y);
        exact = r == y || representable(r, kFp32);
        y = r;
      } else {
        err += roundingBound(std::fabs(y) + err, f);
      }
    };
    if (shape.serverStage) stage(fmt);
    if (out != nullptr) stage(*out);
    return err * (1 + 1e-9);  // the bound can be attained: leave room for the check's own double rounding
  }
  double accumulated = 0;  // bound on |sum_k R_k - K S| (residuals)
  double perCall = 0;      // rounding added by every call, on the mean
  double outMax = 0;       // bound on |R_k|
  switch (codec.family) {
    case Family::kQsgd: {
      const double s = codec.qsgdLevels;
      const double slack = 1 + 1e-5;  // step = max/s and level*step are fp32 operations
      if (codec.qsgdLevels < 2) {
        double e = sumAbsMax * slack;  // worker: each element within its bucket's max
        if (shape.serverStage) e += (mag.maxAbsSum + 2 * sumAbsMax) * slack;
        accumulated = e * calls / div;  // one call (checkCalls): the mean is that call
        outMax = (mag.maxAbsSum + 2 * sumAbsMax) / div;
      } else {
        double worker = sumAbsMax / (s - 1) * slack, serverMax = (mag.maxAbsSum + 2 * worker) / div;
        accumulated = worker / div;
        if (shape.serverStage) accumulated += serverMax / (s - 1) * slack;
        outMax = serverMax * (1 + 1 / (s - 1)) * slack;
      }
      break;
    }
    case Family::kSign:
      if (shape.serverStage) accumulated = kSignResidualFactor * mag.maxAbsSum / div;
      outMax = mag.maxAbsSum / div + accumulated;
      break;
    case Family::kTopK:
      for (int p = 0; p < count; ++p) {
        if (x[p] != 0.0) accumulated += kTopkResidualFactor * mag.maxAbsInput[static_cast<size_t>(p)];
      }
      accumulated /= div;
      outMax = (mag.maxAbsSum + accumulated) / div + accumulated;
      break;
    case Family::kCast:
      break;
  }
  perCall = 8 * u * (count + 2) * (sumAbsMax + mag.maxAbsSum + accumulated + outMax);
  if (out != nullptr) perCall += roundingBound(outMax, *out);
  return accumulated / calls + perCall;
}

}  // namespace tern::compressed_check
