#include "common.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "tern/tern_ext.h"

namespace tern::train::detail {

void fail(ternResult_t code, const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof(buf), format, args);
  va_end(args);
  throw Error(code, buf);
}

void check(ternResult_t r, ternComm_t comm, const char* what) {
  if (r == ternSuccess) return;
  // The core keeps asynchronous failures on the communicator and synchronous ones per thread; ask for both.
  const char* msg = ternGetLastError(comm);
  if (msg == nullptr || msg[0] == '\0') msg = ternGetLastError(nullptr);
  fail(r, "%s: %s (%s)", what, ternGetErrorString(r), msg);
}

size_t floatTypeSize(ternDataType_t dtype) {
  switch (dtype) {
    case ternFloat32:
      return 4;
    case ternFloat16:
    case ternBfloat16:
      return 2;
    default:
      fail(ternInvalidArgument, "datatype %d: the training layers take float32, float16 or bfloat16",
           static_cast<int>(dtype));
  }
}

size_t defaultBucketBytes() {
  // Read through the core's knobs table (its range check and message): libtern_train reads no variable itself.
  double mb = 0;
  check(ternGetKnobNumber("TERN_BUCKET_MB", 25, &mb), nullptr, "TERN_BUCKET_MB");
  return static_cast<size_t>(mb * 1024 * 1024);
}

PendingOp& PendingOp::operator=(PendingOp&& o) noexcept {
  if (this != &o) {
    abandon();
    request_ = o.request_;
    comm_ = o.comm_;
    what_ = std::move(o.what_);
    o.request_ = nullptr;
  }
  return *this;
}

void PendingOp::start(ternResult_t r, const ternRequest_t* request, ternComm_t comm, const char* what) {
  check(r, comm, what);
  abandon();
  request_ = *request;
  comm_ = comm;
  what_ = what;
}

void PendingOp::wait() {
  if (request_ == nullptr) return;
  ternRequest_t req = request_;
  request_ = nullptr;  // ternWait releases it whatever the outcome
  check(ternWait(req), comm_, what_.c_str());
}

bool PendingOp::test() {
  if (request_ == nullptr) return true;
  int done = 0;
  ternResult_t r = ternTest(request_, &done);
  if (r != ternSuccess) {
    request_ = nullptr;  // a failed ternTest reports completion (with its error) and releases the request
    check(r, comm_, what_.c_str());
  }
  if (done) request_ = nullptr;
  return done != 0;
}

void PendingOp::abandon() {
  if (request_ != nullptr) {
    ternWait(request_);
    request_ = nullptr;
  }
}

}  // namespace tern::train::detail
