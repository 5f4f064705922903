// A transport that breaks a real one in a chosen way, to show that the conformance checks
// (transport_conformance.hpp) fail when a transport does: every receive lands in a staging buffer of the inner
// transport and is handed to the caller, once complete, exactly as the fault says. With Fault::kNone it is a
// faithful pass-through, so a failure under a fault is the fault's doing.
#pragma once

#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "transport/transport.hpp"

namespace tern::testing {

enum class Fault {
  kNone,
  kDropLastByte,             // a message's last byte never reaches the caller
  kSwapEqualSizeNeighbours,  // two consecutive equal-size receives from a peer get each other's message
  kFlipBitInLargeMessage,    // one bit in the middle of every message of 1 MiB or more flips
  kOverrunByOne,             // one byte past the end of the receive buffer is written (only for callers that
                             // fence their buffers with guard bytes, as the conformance exchanges do)
  kSwallowErrors,            // a failing transport marks everything done instead of throwing
  kSpin,                     // progress() never sleeps
};

inline const char* faultName(Fault f) {
  switch (f) {
    case Fault::kNone:
      return "none";
    case Fault::kDropLastByte:
      return "drop last byte";
    case Fault::kSwapEqualSizeNeighbours:
      return "swap equal-size neighbours";
    case Fault::kFlipBitInLargeMessage:
      return "flip a bit in large messages";
    case Fault::kOverrunByOne:
      return "overrun by one";
    case Fault::kSwallowErrors:
      return "swallow errors";
    case Fault::kSpin:
      return "spin";
  }
  return "?";
}

class FaultyTransport : public Transport {
 public:
  FaultyTransport(std::unique_ptr<Transport> inner, Fault fault) : fault_(fault), inner_(std::move(inner)) {
    lastUnpaired_.resize(64, nullptr);
  }
  ~FaultyTransport() override { inner_.reset(); }  // before the staging buffers it may still write into

  const char* name() const override { return inner_->name(); }
  bool sameHost(int peer) const override { return inner_->sameHost(peer); }
  void abort(const std::string& reason) override { inner_->abort(reason); }
  bool hasPending() const override { return !ops_.empty(); }

  int progress(int waitMs) override {
    try {
      inner_->progress(fault_ == Fault::kSpin ? 0 : waitMs);
    } catch (const Error&) {
      if (fault_ != Fault::kSwallowErrors) throw;
      return completeEverything();
    }
    return deliver();
  }

 protected:
  void startSend(int peer, const ConstMemRef& src, Transfer* transfer) override {
    Op& op = newOp(peer, true, nullptr, src.bytes, transfer);
    inner_->postSend(peer, src, &op.inner);
  }

  void startRecv(int peer, const MemRef& dst, Transfer* transfer) override {
    void* data = dst.data;
    const size_t bytes = dst.bytes;
    Op& op = newOp(peer, false, static_cast<uint8_t*>(data), bytes, transfer);
    op.staging.resize(bytes);
    if (fault_ == Fault::kSwapEqualSizeNeighbours && bytes > 0) {
      if (static_cast<size_t>(peer) >= lastUnpaired_.size()) lastUnpaired_.resize(peer + 1, nullptr);
      Op*& last = lastUnpaired_[peer];
      if (last != nullptr && !last->delivered && last->bytes == bytes) {
        last->partner = &op;
        op.partner = last;
        last = nullptr;
      } else {
        last = &op;
      }
    }
    inner_->postRecv(peer, op.staging.data(), bytes, &op.inner);
  }

 private:
  struct Op {
    int peer = 0;
    bool send = false;
    uint8_t* user = nullptr;
    size_t bytes = 0;
    Transfer* outer = nullptr;
    Transfer inner;
    std::vector<uint8_t> staging;
    Op* partner = nullptr;
    bool delivered = false;
  };

  Op& newOp(int peer, bool send, uint8_t* user, size_t bytes, Transfer* outer) {
    outer->done = false;
    outer->bytes = bytes;
    auto op = std::make_unique<Op>();
    op->peer = peer;
    op->send = send;
    op->user = user;
    op->bytes = bytes;
    op->outer = outer;
    ops_.push_back(std::move(op));
    return *ops_.back();
  }

  void land(Op& op, const std::vector<uint8_t>& message) {
    size_t n = op.bytes;
    if (fault_ == Fault::kDropLastByte && n > 0) --n;
    if (n > 0) std::memcpy(op.user, message.data(), n);
    if (fault_ == Fault::kFlipBitInLargeMessage && op.bytes >= (size_t{1} << 20)) op.user[op.bytes / 2] ^= 0x10;
    if (fault_ == Fault::kOverrunByOne && op.user != nullptr) op.user[op.bytes] ^= 0xff;
  }

  void finish(Op& op) {
    op.delivered = true;
    op.outer->done = true;
  }

  int deliver() {
    int completed = 0;
    for (auto& p : ops_) {
      Op& op = *p;
      if (op.delivered || !op.inner.done) continue;
      if (op.send) {
        finish(op);
      } else if (op.partner == nullptr) {
        land(op, op.staging);
        finish(op);
      } else if (op.partner->inner.done) {
        land(op, op.partner->staging);
        land(*op.partner, op.staging);
        finish(*op.partner);
        finish(op);
        ++completed;
      } else {
        continue;  // its partner's message is not here yet
      }
      ++completed;
    }
    // Finished ops at the front are forgotten (a partner always sits behind the op it pairs with, and is finished
    // with it); the rest stay, in posting order.
    while (!ops_.empty() && ops_.front()->delivered) {
      if (ops_.front()->partner == nullptr || ops_.front()->partner->delivered) {
        for (Op*& last : lastUnpaired_) {
          if (last == ops_.front().get()) last = nullptr;
        }
        ops_.pop_front();
      } else {
        break;
      }
    }
    return completed;
  }

  int completeEverything() {
    int completed = 0;
    for (auto& op : ops_) {
      if (!op->delivered) {
        finish(*op);
        ++completed;
      }
    }
    for (Op*& last : lastUnpaired_) last = nullptr;
    ops_.clear();
    return completed;
  }

  Fault fault_;
  std::deque<std::unique_ptr<Op>> ops_;  // posted and not yet forgotten, in posting order
  std::vector<Op*> lastUnpaired_;        // per peer: a receive that may pair with the next one of its size
  std::unique_ptr<Transport> inner_;     // declared last: destroyed first, while the staging buffers still exist
};

}  // namespace tern::testing
