#include "transport/ibverbs/ib_credits.hpp"

#include "base/error.hpp"

namespace tern::ib {

uint32_t CreditWindow::take() {
  if (credits_ == 0) throwError(ternInternalError, "ibverbs: chunk sent without a credit");
  --credits_;
  return static_cast<uint32_t>(sent_++ % slots_);
}

void CreditWindow::grant(uint32_t n) {
  if (n > slots_ - credits_) {
    throwError(ternInternalError, "ibverbs: peer returned %u credits with only %u outstanding (protocol error)", n,
               slots_ - credits_);
  }
  credits_ += n;
}

void RingReceiver::arrived() {
  // Unreturned slots (consumed but owed, or not consumed) can never exceed the ring: the sender had no credit.
  if (arrived_ - returned_ >= slots_) {
    throwError(ternInternalError, "ibverbs: peer wrote past its credits (ring of %u slots overrun)", slots_);
  }
  ++arrived_;
}

void RingReceiver::consume() {
  if (!hasChunk()) throwError(ternInternalError, "ibverbs: consumed a chunk that never arrived");
  ++consumed_;
  ++owed_;
}

uint32_t RingReceiver::takeOwed() {
  uint32_t n = owed_;
  returned_ += n;
  owed_ = 0;
  return n;
}

}  // namespace tern::ib
