// AbortSignal: the abort request of a transport that sleeps on file descriptors (TCP, UCX, ibverbs).
//
// Transport::abort() may come from any thread, while the thread that drives the transport sleeps in poll(). The
// signal keeps the first reason given (later ones are dropped) and writes an eventfd that the sleeper polls along
// with its own descriptors, so it wakes at once and reports the abort. Every such transport needs exactly this, and
// the error it reports afterwards reads the same whichever transport it is.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

namespace tern {

class AbortSignal {
 public:
  // Opens the wake eventfd. When that fails wakeFd() is -1 and errno says why; the owner decides whether it can
  // do without (a sleeper then notices the abort only when its poll() slice ends).
  AbortSignal();
  ~AbortSignal();
  AbortSignal(const AbortSignal&) = delete;
  AbortSignal& operator=(const AbortSignal&) = delete;

  // Records reason and wakes the sleeper. Returns false, changing nothing, if the signal was raised already.
  bool raise(const std::string& reason);
  bool raised() const { return raised_.load(std::memory_order_acquire); }
  std::string reason() const;
  // The error every call reports after the abort: "rank R: communicator aborted: <reason>".
  std::string errorMessage(int rank) const;
  // Poll it for POLLIN to wake up on raise().
  int wakeFd() const { return wakeFd_; }

 private:
  int wakeFd_ = -1;
  std::atomic<bool> raised_{false};
  mutable std::mutex mutex_;  // guards reason_
  std::string reason_;
};

}  // namespace tern
