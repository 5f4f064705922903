#include "output_sink.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace tern::run {

void OutputSink::Write(std::string_view data) {
  while (!broken_ && !data.empty()) {
    ssize_t n = ::write(fd_, data.data(), data.size());
    if (n >= 0) {
      data.remove_prefix(static_cast<size_t>(n));
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      // Someone else set O_NONBLOCK on a file description we share; wait for room instead of spinning.
      pollfd pfd{fd_, POLLOUT, 0};
      ::poll(&pfd, 1, -1);
    } else {
      broken_ = true;
    }
  }
}

}  // namespace tern::run
