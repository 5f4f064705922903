// A predicted time split into the terms that make it up: latency and transfer seconds per link class, reduction,
// copy and codec seconds. The simulator carries one along every chain of events and keeps, at each max(), the one
// of the branch that won, so the breakdown of the finish time is the critical path's: it says what the time is
// made of (what to blame), and, since every term is a count times a parameter, it turns measured times into a
// linear least-squares problem in those parameters (planner/fit.hpp).
#pragma once

#include <array>

#include "planner/model_link.hpp"

namespace tern::planner {

struct Breakdown {
  std::array<double, kNumModelLinks> latency{};   // seconds of alpha terms, per class
  std::array<double, kNumModelLinks> transfer{};  // seconds of bytes x beta terms, per class
  double reduce = 0;                              // seconds of reductions (bytes x gamma)
  double copy = 0;                                // seconds of copies, finalizes and casts
  double codec = 0;                               // seconds of encodes and decodes

  double total() const {
    double t = reduce + copy + codec;
    for (int i = 0; i < kNumModelLinks; ++i) t += latency[i] + transfer[i];
    return t;
  }
  Breakdown& operator+=(const Breakdown& o) {
    for (int i = 0; i < kNumModelLinks; ++i) {
      latency[i] += o.latency[i];
      transfer[i] += o.transfer[i];
    }
    reduce += o.reduce;
    copy += o.copy;
    codec += o.codec;
    return *this;
  }
  Breakdown operator*(double k) const {
    Breakdown b = *this;
    for (int i = 0; i < kNumModelLinks; ++i) {
      b.latency[i] *= k;
      b.transfer[i] *= k;
    }
    b.reduce *= k;
    b.copy *= k;
    b.codec *= k;
    return b;
  }
  Breakdown operator+(const Breakdown& o) const {
    Breakdown b = *this;
    b += o;
    return b;
  }
};

}  // namespace tern::planner
