// Credit-based flow control over a peer's receive ring.
//
// Each (sender, receiver) pair has a ring of S slots in the receiver's memory that the sender fills with RDMA
// writes, in order: chunk k goes to slot k mod S. The sender holds one credit per slot it may write; a write takes
// one, and the receiver gives credits back (in one small message per batch) once it copied the slots out. So the
// sender can never overwrite a slot that was not consumed, and never needs to ask. Everything here is counting
// (no verbs), and unit-tested.
#pragma once

#include <cstdint>

namespace tern::ib {

// The sender's side: how many slots of the peer's ring it may still write, and which one is next.
class CreditWindow {
 public:
  explicit CreditWindow(uint32_t slots) : slots_(slots), credits_(slots) {}
  bool canSend() const { return credits_ > 0; }
  uint32_t credits() const { return credits_; }
  uint64_t sent() const { return sent_; }
  // Takes a credit; returns the slot the chunk goes to.
  uint32_t take();
  // The receiver freed n slots. Throws tern::Error(ternInternalError) if it returns more than were taken.
  void grant(uint32_t n);

 private:
  uint32_t slots_;
  uint32_t credits_;
  uint64_t sent_ = 0;
};

// The receiver's side: chunks that landed, the oldest not yet copied out, and slots freed but not yet returned.
class RingReceiver {
 public:
  explicit RingReceiver(uint32_t slots) : slots_(slots) {}
  // A chunk landed. Throws tern::Error(ternInternalError) if the sender wrote more than its credits allow.
  void arrived();
  bool hasChunk() const { return arrived_ > consumed_; }
  // The slot the next chunk must land in (the sender fills the ring in order).
  uint32_t arrivalSlot() const { return static_cast<uint32_t>(arrived_ % slots_); }
  uint32_t headSlot() const { return static_cast<uint32_t>(consumed_ % slots_); }
  // The head chunk was copied out; its slot is owed back to the sender.
  void consume();
  uint32_t owed() const { return owed_; }
  // Returns (and forgets) the credits to send back now.
  uint32_t takeOwed();

 private:
  uint32_t slots_;
  uint64_t arrived_ = 0;
  uint64_t consumed_ = 0;
  uint64_t returned_ = 0;
  uint32_t owed_ = 0;
};

}  // namespace tern::ib
