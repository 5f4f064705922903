// Routes each peer to the transport that serves it best (shared memory for ranks on this host, TCP for the rest)
// behind the one Transport interface, so algorithms never know the difference.
#pragma once

#include <vector>

#include "transport/transport.hpp"

namespace tern {

class RoutedTransport : public Transport {
 public:
  // network serves every peer not routed to local; local serves peers with localPeers[p] true.
  RoutedTransport(Transport* network, Transport* local, std::vector<bool> localPeers)
      : network_(network), local_(local), localPeers_(std::move(localPeers)) {}

  const char* name() const override { return "shm+tcp"; }
  void postSend(int peer, const void* data, size_t bytes, Transfer* t) override {
    route(peer)->postSend(peer, data, bytes, t);
  }
  void postRecv(int peer, void* data, size_t bytes, Transfer* t) override {
    route(peer)->postRecv(peer, data, bytes, t);
  }
  int progress(int waitMs) override {
    int done = local_->progress(0) + network_->progress(0);
    if (done > 0 || waitMs <= 0) return done;
    bool localBusy = local_->hasPending(), networkBusy = network_->hasPending();
    // Sleep in the one transport that has work; with work on both, take short turns so neither starves.
    if (localBusy && !networkBusy) return local_->progress(waitMs);
    if (networkBusy && !localBusy) return network_->progress(waitMs);
    return local_->progress(1) + network_->progress(1);
  }
  void abort(const std::string& reason) override {
    local_->abort(reason);
    network_->abort(reason);
  }
  void withdrawAfterFailure() override {
    local_->withdrawAfterFailure();
    network_->withdrawAfterFailure();
  }
  bool hasPending() const override { return local_->hasPending() || network_->hasPending(); }
  bool sameHost(int peer) const override { return localPeers_[peer]; }

 private:
  Transport* route(int peer) { return localPeers_[peer] ? local_ : network_; }
  Transport* network_;
  Transport* local_;
  std::vector<bool> localPeers_;
};

}  // namespace tern
