#include "signal_channel.hpp"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace tern::run {

SignalChannel::SignalChannel() {
  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&handled, sig);
  // Block before any child exists: a rank that exits at once must still leave a SIGCHLD pending for the signalfd.
  if (::sigprocmask(SIG_BLOCK, &handled, &original_mask_) != 0) {
    throw std::system_error(errno, std::generic_category(), "sigprocmask");
  }
  fd_.Reset(::signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!fd_.valid()) throw std::system_error(errno, std::generic_category(), "signalfd");
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGPIPE, &ignore, &original_sigpipe_);
}

std::vector<int> SignalChannel::ReadPending() {
  std::vector<int> signals;
  signalfd_siginfo info;
  while (true) {
    ssize_t n = ::read(fd_.get(), &info, sizeof(info));
    if (n == static_cast<ssize_t>(sizeof(info))) {
      signals.push_back(static_cast<int>(info.ssi_signo));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // EAGAIN: nothing more pending
    }
  }
  return signals;
}

void SignalChannel::RestoreForChild() const {
  ::sigaction(SIGPIPE, &original_sigpipe_, nullptr);
  ::sigprocmask(SIG_SETMASK, &original_mask_, nullptr);
}

}  // namespace tern::run
