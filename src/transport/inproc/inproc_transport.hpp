// In-process transport: N ranks as threads of one process, for fast unit tests of every algorithm and of the
// communicator. A send is matched with the receive at the head of the same (src, dst) mailbox; whichever thread
// completes the match copies the bytes (no intermediate buffer) and hands both completions to their owners, who
// mark them done in their own progress() (so Transfer objects are only touched by their owning thread). The copy
// runs under the mailbox lock and never after an abort; an aborted rank passes through its mailboxes' locks before
// its call returns, so no other thread is still copying from or into buffers the call is about to free.
#pragma once

#include <memory>
#include <string>

#include "base/unique_id.hpp"
#include "transport/transport.hpp"

namespace tern {

class InprocGroup;

class InprocTransport : public Transport {
 public:
  // Joins (creating on first use) the process-wide group named by the secret.
  static std::unique_ptr<InprocTransport> join(const Secret& secret, int rank, int nranks);
  ~InprocTransport() override;

  const char* name() const override { return "inproc"; }
  int progress(int waitMs) override;
  void abort(const std::string& reason) override;
  bool sameHost(int) const override { return true; }
  bool hasPending() const override { return outstanding_ > 0; }

 protected:
  void startSend(int peer, const ConstMemRef& src, Transfer* transfer) override;
  void startRecv(int peer, const MemRef& dst, Transfer* transfer) override;

 private:
  InprocTransport(std::shared_ptr<InprocGroup> group, int rank) : group_(std::move(group)), rank_(rank) {}
  std::shared_ptr<InprocGroup> group_;
  int rank_;
  size_t outstanding_ = 0;
};

}  // namespace tern
