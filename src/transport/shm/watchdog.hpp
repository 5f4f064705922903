// What turns a wait on a same-host peer into an error instead of a hang: the call's deadline (TERN_TIMEOUT), an
// abort of the communicator or of this transport, a peer that aborted (its flag in shared memory), and a peer that
// died (its TCP connections closed: the kernel closes them for a killed process, which shared memory cannot show).
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "base/socket.hpp"

namespace tern {
class TcpTransport;
}

namespace tern::shm {

class Mesh;

// A borrowed "what are we waiting for" callable: waits pass one on every call, but it runs only to word an error.
class Describe {
 public:
  template <typename F>
  Describe(const F& f)  // NOLINT(google-explicit-constructor): meant to wrap lambdas at call sites
      : object_(&f), call_([](const void* o) -> std::string { return (*static_cast<const F*>(o))(); }) {}
  std::string operator()() const { return call_(object_); }

 private:
  const void* object_;
  std::string (*call_)(const void*);
};

class Watchdog {
 public:
  Watchdog(Mesh* mesh, TcpTransport* tcp, int timeoutMs) : mesh_(mesh), tcp_(tcp), timeoutMs_(timeoutMs) {}

  // This rank's shared-memory side aborts: every wait throws from now on, and peers see the flag.
  void abort(const std::string& reason);
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }

  // Throws if a wait for peer must end now because of an abort or the deadline. what names the wait (e.g.
  // "allreduce waiting for rank 2's input of chunk 3/8"); it is formatted only into errors.
  void checkAbortAndDeadline(int peer, Clock::time_point deadline, const std::atomic<bool>* abortFlag,
                             const Describe& what);
  // True if peer aborted or died; the caller re-checks its condition once more before reporting (the peer may have
  // finished its part and exited normally).
  bool peerGone(int peer);
  // The error for a peer that peerGone() reported.
  [[noreturn]] void throwPeerGone(int peer, const Describe& what);

  int timeoutMs() const { return timeoutMs_; }

 private:
  Mesh* mesh_;
  TcpTransport* tcp_;
  int timeoutMs_;
  std::atomic<bool> aborted_{false};
  std::mutex mutex_;
  std::string reason_;
};

}  // namespace tern::shm
