// FailureLatch: the first error a transport hits, kept and thrown again by every later call.
//
// After a failure the UCX and ibverbs transports must never touch their callers' Transfers again (the callers may
// have given up on them), and the hardware or library must stop writing into memory that may go away. So the first
// error stops the transport's outstanding work once, through the owner's stop action, and from then on every call
// throws that same error instead of doing anything.
#pragma once

#include <functional>
#include <string>

#include "tern/tern.h"

namespace tern {

class FailureLatch {
 public:
  // stopOutstandingWork runs once, when the first error is kept (it must not throw).
  explicit FailureLatch(std::function<void()> stopOutstandingWork);

  bool failed() const { return failed_; }
  // Keeps (code, message) unless an error is kept already, then throws the kept error.
  [[noreturn]] void fail(ternResult_t code, const std::string& message);
  // Throws the kept error, if any.
  void rethrowIfFailed() const;

 private:
  [[noreturn]] void rethrow() const;

  std::function<void()> stopOutstandingWork_;
  bool failed_ = false;
  ternResult_t code_ = ternSuccess;
  std::string message_;
};

}  // namespace tern
