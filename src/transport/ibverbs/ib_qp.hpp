// An RC queue pair to one peer and its walk through the verbs state machine: RESET -> INIT (port, remote-write
// access) -> RTR (the peer's QPN, PSN, LID or GID, path MTU) -> RTS (our PSN, timeouts, retries).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

#include "transport/ibverbs/ib_device.hpp"
#include "transport/ibverbs/ib_wire.hpp"

namespace tern::ib {

struct QpTuning {
  int timeout = 20;  // TERN_IB_TIMEOUT: ack timeout 4.096 us * 2^timeout (NCCL's default 20 ~ 4.3 s)
  int retryCount = 7;
  int serviceLevel = 0;  // TERN_IB_SL
  int trafficClass = 0;  // TERN_IB_TC (RoCE: DSCP << 2)
};

class QueuePair {
 public:
  QueuePair(Device& device, uint32_t sendDepth, uint32_t recvDepth, int rank, int peer);
  ~QueuePair();
  QueuePair(const QueuePair&) = delete;
  QueuePair& operator=(const QueuePair&) = delete;

  ibv_qp* qp() const { return qp_; }
  uint32_t qpn() const { return qp_->qp_num; }
  uint32_t psn() const { return psn_; }

  void toInit();
  // Connects to the peer's record (RTR, then RTS).
  void connect(const QpAddress& remote, const QpTuning& tuning);
  // Moves the QP to the error state: outstanding work requests flush and the peer's writes stop landing.
  void toError();

 private:
  [[noreturn]] void fail(const char* step, int err);

  Device& device_;
  int rank_;
  int peer_;
  ibv_qp* qp_ = nullptr;
  uint32_t psn_;
};

}  // namespace tern::ib
