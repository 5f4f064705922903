// Routes each peer to the transport that serves it (shared memory for ranks on this host, the network for the
// rest; the routes come from the transport registry's routePeers) behind the one Transport interface, so
// algorithms never know the difference.
#pragma once

#include <string>
#include <vector>

#include "transport/transport.hpp"

namespace tern {

class RoutedTransport : public Transport {
 public:
  // members: every transport routed to, in order of preference (their names, joined by '+', are this transport's
  // name); routes[p]: the member that serves peer p (nullptr for this rank); sameHost[p]: p shares this host.
  RoutedTransport(std::vector<Transport*> members, std::vector<Transport*> routes, std::vector<bool> sameHost)
      : members_(std::move(members)), routes_(std::move(routes)), sameHost_(std::move(sameHost)) {
    for (Transport* m : members_) name_ += (name_.empty() ? "" : "+") + std::string(m->name());
  }

  const char* name() const override { return name_.c_str(); }
  bool carries(MemoryKind kind) const override {
    for (Transport* m : members_) {
      if (!m->carries(kind)) return false;
    }
    return true;
  }
  int progress(int waitMs) override {
    int done = 0;
    // Only members with transfers posted: an idle one has nothing to move, and a pass over its sockets or rings on
    // every look would tax the busy one's latency.
    for (Transport* m : members_) {
      if (m->hasPending()) done += m->progress(0);
    }
    if (done > 0 || waitMs <= 0) return done;
    // Sleep in the one transport that has work; with work on several, take short turns so none starves.
    Transport* busy = nullptr;
    int nBusy = 0;
    for (Transport* m : members_) {
      if (m->hasPending()) {
        busy = m;
        ++nBusy;
      }
    }
    if (nBusy == 1) return busy->progress(waitMs);
    for (Transport* m : members_) done += m->progress(1);
    return done;
  }
  void abort(const std::string& reason) override {
    for (Transport* m : members_) m->abort(reason);
  }
  void withdrawAfterFailure() override {
    for (Transport* m : members_) m->withdrawAfterFailure();
  }
  bool hasPending() const override {
    for (Transport* m : members_) {
      if (m->hasPending()) return true;
    }
    return false;
  }
  bool sameHost(int peer) const override { return sameHost_[peer]; }

 protected:
  void startSend(int peer, const ConstMemRef& src, Transfer* t) override { route(peer)->postSend(peer, src, t); }
  void startRecv(int peer, const MemRef& dst, Transfer* t) override { route(peer)->postRecv(peer, dst, t); }

 private:
  Transport* route(int peer) { return routes_[peer]; }
  std::vector<Transport*> members_;
  std::vector<Transport*> routes_;
  std::vector<bool> sameHost_;
  std::string name_;
};

}  // namespace tern
