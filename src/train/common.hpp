// Helpers shared by the training layers: error conversion from the C API, element types, timing, and an owned
// async request. Everything here sits on top of tern/tern.h; nothing reaches into the core library.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "tern/train.h"

namespace tern::train::detail {

using Clock = std::chrono::steady_clock;

inline double secondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Throws Error(code, printf-formatted message).
[[noreturn]] void fail(ternResult_t code, const char* format, ...) __attribute__((format(printf, 2, 3)));

// Throws Error when r is not ternSuccess, with what failed and the core library's own message for it.
void check(ternResult_t r, ternComm_t comm, const char* what);

// Size in bytes of one element; fails for types the training layers do not handle as floating point.
size_t floatTypeSize(ternDataType_t dtype);

// Bucket capacity from TERN_BUCKET_MB (megabytes, may be fractional), else 25 MB.
size_t defaultBucketBytes();

// An asynchronous operation that must be waited for exactly once. Destruction waits (ignoring errors) so that a
// failure path never leaves a collective writing into freed memory.
class PendingOp {
 public:
  PendingOp() = default;
  ~PendingOp() { abandon(); }
  PendingOp(const PendingOp&) = delete;
  PendingOp& operator=(const PendingOp&) = delete;
  PendingOp(PendingOp&& o) noexcept : request_(o.request_), comm_(o.comm_) { o.request_ = nullptr; }
  PendingOp& operator=(PendingOp&& o) noexcept;

  // Adopts the request an Async call just wrote to *request (r is that call's result). A pointer, not the value:
  // in start(ternXAsync(..., &req), req, ...) the copy of req could be taken before the call writes it.
  void start(ternResult_t r, const ternRequest_t* request, ternComm_t comm, const char* what);
  bool active() const { return request_ != nullptr; }
  // Blocks until done; throws on failure.
  void wait();
  // True (and released) once done; throws on failure.
  bool test();

 private:
  void abandon();
  ternRequest_t request_ = nullptr;
  ternComm_t comm_ = nullptr;
  std::string what_;
};

}  // namespace tern::train::detail
