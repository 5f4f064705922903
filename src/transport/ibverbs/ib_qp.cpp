#include "transport/ibverbs/ib_qp.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include "base/error.hpp"

namespace tern::ib {

QueuePair::QueuePair(Device& device, uint32_t sendDepth, uint32_t recvDepth, int rank, int peer)
    : device_(device), rank_(rank), peer_(peer) {
  ibv_qp_init_attr init{};
  init.send_cq = device.cq();
  init.recv_cq = device.cq();
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = sendDepth;
  init.cap.max_recv_wr = recvDepth;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.sq_sig_all = 0;
  qp_ = ibv_create_qp(device.pd(), &init);
  if (qp_ == nullptr) fail("ibv_create_qp", errno);
  // A random initial PSN, as the spec recommends, so a stale packet of an earlier connection is never accepted.
  std::random_device rd;
  psn_ = rd() & 0xffffff;
}

QueuePair::~QueuePair() {
  if (qp_ != nullptr) ibv_destroy_qp(qp_);
}

void QueuePair::fail(const char* step, int err) {
  throwError(ternSystemError, "rank %d: ibverbs: %s for the queue pair to rank %d failed: %s", rank_, step, peer_,
             std::strerror(err));
}

void QueuePair::toInit() {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = static_cast<uint8_t>(device_.port().port);
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  int r = ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  if (r != 0) fail("RESET->INIT", r);
}

void QueuePair::connect(const QpAddress& remote, const QpTuning& tuning) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = static_cast<ibv_mtu>(std::min(remote.mtu, device_.mtu()));
  a.dest_qp_num = remote.qpn;
  a.rq_psn = remote.psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;  // 0.64 ms before a sender retries when we had no receive posted
  a.ah_attr.dlid = remote.lid;
  a.ah_attr.sl = static_cast<uint8_t>(tuning.serviceLevel);
  a.ah_attr.src_path_bits = 0;
  a.ah_attr.port_num = static_cast<uint8_t>(device_.port().port);
  // RoCE has no LIDs: every packet is routed by GID (RoCE v2: UDP/IP). On InfiniBand the GRH is only needed
  // across subnets, which the remote LID alone cannot reach; a peer without a LID means it is RoCE too.
  if (device_.roce() || remote.lid == 0) {
    a.ah_attr.is_global = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, remote.gid.data(), 16);
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(device_.gidIndex());
    a.ah_attr.grh.hop_limit = 255;
    a.ah_attr.grh.traffic_class = static_cast<uint8_t>(tuning.trafficClass);
    a.ah_attr.grh.flow_label = 0;
  }
  int r = ibv_modify_qp(qp_, &a,
                        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                            IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  if (r != 0) fail("INIT->RTR (check TERN_IB_GID_INDEX and that both ranks share a fabric)", r);

  ibv_qp_attr s{};
  s.qp_state = IBV_QPS_RTS;
  s.timeout = static_cast<uint8_t>(tuning.timeout);
  s.retry_cnt = static_cast<uint8_t>(tuning.retryCount);
  s.rnr_retry = 7;  // infinite: a receiver that has not reposted yet is not an error
  s.sq_psn = psn_;
  s.max_rd_atomic = 1;
  r = ibv_modify_qp(
      qp_, &s,
      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
  if (r != 0) fail("RTR->RTS", r);
}

void QueuePair::toError() {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  ibv_modify_qp(qp_, &a, IBV_QP_STATE);
}

}  // namespace tern::ib
