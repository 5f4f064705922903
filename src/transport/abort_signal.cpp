#include "transport/abort_signal.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

#include "base/error.hpp"

namespace tern {

AbortSignal::AbortSignal() { wakeFd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

AbortSignal::~AbortSignal() {
  if (wakeFd_ >= 0) ::close(wakeFd_);
}

bool AbortSignal::raise(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (raised_.load()) return false;
    reason_ = reason;
  }
  raised_.store(true, std::memory_order_release);
  uint64_t one = 1;
  (void)!::write(wakeFd_, &one, sizeof(one));
  return true;
}

std::string AbortSignal::reason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reason_;
}

std::string AbortSignal::errorMessage(int rank) const {
  return format("rank %d: communicator aborted: %s", rank, reason().c_str());
}

}  // namespace tern
