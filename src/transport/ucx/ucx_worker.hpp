// The UCP context and worker of one communicator.
//
// One context per communicator (not per process): a context owns the memory registrations, and giving each
// communicator its own keeps their lifetimes independent (a communicator destroyed on one thread never pulls a
// registration from under another). The context reads UCX's own environment (UCX_TLS, UCX_NET_DEVICES, UCX_*), so
// those knobs pass straight through; the one default tern changes is UCX_RNDV_THRESH (to inf) when UCX_TLS is
// TCP-only and the user left it unset (see the constructor).
//
// Thread mode SERIALIZED, not SINGLE: the communicator runs blocking calls on the caller's thread and queued async
// calls on its worker thread, never both at once (it hands over under a mutex), so the worker is used by several
// threads one at a time, which is exactly what SERIALIZED promises UCX. No UCX lock is taken on the fast path either
// way. abort() from other threads never touches UCX: it only writes an eventfd.
#pragma once

#include <ucp/api/ucp.h>

#include <vector>

namespace tern::ucx {

class Worker {
 public:
  // Creates the context (tag matching + wakeup) and the worker; throws tern::Error with UCX's reason on failure.
  Worker(int rank, int nranks);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  ucp_context_h context() const { return context_; }
  ucp_worker_h worker() const { return worker_; }
  // Becomes readable when the armed worker has events (see ucp_worker_arm).
  int eventFd() const { return eventFd_; }
  // The worker's address blob, to send to peers.
  std::vector<char> address() const;
  // Runs UCX progress until it reports nothing more to do; returns the number of rounds that made progress.
  unsigned drain();

 private:
  int rank_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int eventFd_ = -1;
};

}  // namespace tern::ucx
