#include "transport/failure_latch.hpp"

#include <utility>

#include "base/error.hpp"

namespace tern {

FailureLatch::FailureLatch(std::function<void()> stopOutstandingWork)
    : stopOutstandingWork_(std::move(stopOutstandingWork)) {}

void FailureLatch::fail(ternResult_t code, const std::string& message) {
  if (!failed_) {
    failed_ = true;
    code_ = code;
    message_ = message;
    stopOutstandingWork_();
  }
  rethrow();
}

void FailureLatch::rethrowIfFailed() const {
  if (failed_) rethrow();
}

void FailureLatch::rethrow() const { throw Error(code_, message_); }

}  // namespace tern
