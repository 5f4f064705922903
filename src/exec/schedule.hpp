// A Schedule is one rank's part of a collective: a list of steps over chunks of three buffers (the user's input
// and output, and a scratch area). Algorithms are functions that build schedules; the Executor runs them over a
// Transport; the cost model prices them. Schedules hold offsets, never pointers, so they can be cached and reused
// for every call with the same shape.
//
// Ordering rules the builders follow and the executor relies on:
//  - deps name earlier steps (smaller index) that must complete before a step may start;
//  - sends to one peer are posted in step order, and so are receives from one peer; a builder must emit, for each
//    pair of ranks, sends on one side in the same order as the matching receives on the other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tern/tern.h"

namespace tern {

enum class BufferId : uint8_t { kInput, kOutput, kScratch };

struct Span {
  BufferId buffer = BufferId::kInput;
  size_t offset = 0;  // bytes
  size_t bytes = 0;
};

enum class StepKind : uint8_t {
  kSend,      // send src to peer
  kRecv,      // receive from peer into dst
  kReduce,    // dst = src op src2 (element-wise, the collective's dtype and op)
  kCopy,      // dst = src (no-op when they are the same memory)
  kFinalize,  // dst = op's post-processing of dst (avg: divide by the collective's rank count)
  // Compressed collectives (the executor holds the codec and the error-feedback states):
  kEncode,  // dst (payload) = codec(src elements of the input dtype), using/updating error-feedback state `slot`
  kDecode,  // dst (fp32) (+)= decode(src payload); accumulate selects += or =
  kCast,    // dst (output dtype) = src (fp32), rounded to nearest even
};

struct Step {
  StepKind kind;
  int peer = -1;
  Span dst;
  Span src;
  Span src2;
  std::vector<uint32_t> deps;
  // kEncode/kDecode only: global index of the chunk's first element (error-feedback slice, RNG key), element
  // count, which error-feedback state (0 worker, 1 server), and decode's accumulate flag.
  uint64_t elementOffset = 0;
  uint64_t elements = 0;
  uint8_t slot = 0;
  bool accumulate = false;
};

struct Schedule {
  std::vector<Step> steps;
  size_t scratchBytes = 0;
  std::string algorithm;  // name, for logs and perf JSON
};

// Small helpers that keep builders readable.
inline Span inputSpan(size_t offset, size_t bytes) { return {BufferId::kInput, offset, bytes}; }
inline Span outputSpan(size_t offset, size_t bytes) { return {BufferId::kOutput, offset, bytes}; }
inline Span scratchSpan(size_t offset, size_t bytes) { return {BufferId::kScratch, offset, bytes}; }

class ScheduleBuilder {
 public:
  explicit ScheduleBuilder(std::string algorithm) { schedule_.algorithm = std::move(algorithm); }
  uint32_t send(int peer, Span src, std::vector<uint32_t> deps = {}) {
    return add({StepKind::kSend, peer, {}, src, {}, std::move(deps)});
  }
  uint32_t recv(int peer, Span dst, std::vector<uint32_t> deps = {}) {
    return add({StepKind::kRecv, peer, dst, {}, {}, std::move(deps)});
  }
  uint32_t reduce(Span dst, Span a, Span b, std::vector<uint32_t> deps = {}) {
    return add({StepKind::kReduce, -1, dst, a, b, std::move(deps)});
  }
  uint32_t copy(Span dst, Span src, std::vector<uint32_t> deps = {}) {
    return add({StepKind::kCopy, -1, dst, src, {}, std::move(deps)});
  }
  uint32_t finalize(Span dst, std::vector<uint32_t> deps = {}) {
    return add({StepKind::kFinalize, -1, dst, {}, {}, std::move(deps)});
  }
  uint32_t encode(Span payload, Span src, uint64_t elementOffset, uint64_t elements, uint8_t slot,
                  std::vector<uint32_t> deps = {}) {
    Step s{StepKind::kEncode, -1, payload, src, {}, std::move(deps)};
    s.elementOffset = elementOffset;
    s.elements = elements;
    s.slot = slot;
    return add(std::move(s));
  }
  uint32_t decode(Span dst, Span payload, uint64_t elements, bool accumulate, std::vector<uint32_t> deps = {}) {
    Step s{StepKind::kDecode, -1, dst, payload, {}, std::move(deps)};
    s.elements = elements;
    s.accumulate = accumulate;
    return add(std::move(s));
  }
  uint32_t cast(Span dst, Span src, uint64_t elements, std::vector<uint32_t> deps = {}) {
    Step s{StepKind::kCast, -1, dst, src, {}, std::move(deps)};
    s.elements = elements;
    return add(std::move(s));
  }
  void needScratch(size_t bytes) {
    if (bytes > schedule_.scratchBytes) schedule_.scratchBytes = bytes;
  }
  Schedule take() { return std::move(schedule_); }

 private:
  uint32_t add(Step s) {
    schedule_.steps.push_back(std::move(s));
    return static_cast<uint32_t>(schedule_.steps.size() - 1);
  }
  Schedule schedule_;
};

}  // namespace tern
