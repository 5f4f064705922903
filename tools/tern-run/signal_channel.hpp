// Signals tern-run reacts to (SIGCHLD, and SIGINT/SIGTERM/SIGHUP to forward), delivered through a signalfd so the
// poll loop sees them next to the ranks' pipes and never has to poll for exits.
#pragma once

#include <signal.h>

#include <vector>

#include "unique_fd.hpp"

namespace tern::run {

class SignalChannel {
 public:
  // Blocks the signals above and opens a non-blocking signalfd for them; ignores SIGPIPE so that a closed stdout
  // shows up as EPIPE instead of killing the launcher. Signals the caller inherited as ignored (nohup) stay
  // ignored. Throws std::system_error.
  SignalChannel();
  SignalChannel(const SignalChannel&) = delete;
  SignalChannel& operator=(const SignalChannel&) = delete;

  int fd() const { return fd_.get(); }

  // The signals that arrived since the last call, in arrival order; several SIGCHLDs may coalesce into one.
  std::vector<int> ReadPending();

  // Gives a forked rank the signal mask and SIGPIPE disposition tern-run itself started with. Only calls
  // async-signal-safe functions, as it runs between fork and exec.
  void RestoreForChild() const;

 private:
  UniqueFd fd_;
  sigset_t original_mask_{};
  struct sigaction original_sigpipe_ {};
};

}  // namespace tern::run
