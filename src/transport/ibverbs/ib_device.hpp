// One RDMA port opened for a communicator: device context, protection domain, and the completion queue every QP of
// the communicator shares, with a completion channel whose file descriptor progress() sleeps on.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <vector>

#include "transport/ibverbs/ib_hca_spec.hpp"

namespace tern::ib {

// Every port of every RDMA device on this host (empty when there is none, or no RDMA kernel support).
std::vector<PortInfo> enumeratePorts();

class Device {
 public:
  // Opens port.device, reads the port's attributes and GID table, picks the GID index (requested: -1 automatic)
  // and creates the PD, completion channel and a CQ of cqEntries. Throws tern::Error naming the failed verb.
  Device(const PortInfo& port, int gidIndexRequested, int cqEntries, int rank);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  ibv_context* context() const { return context_; }
  ibv_pd* pd() const { return pd_; }
  ibv_cq* cq() const { return cq_; }
  int eventFd() const { return channel_->fd; }
  const PortInfo& port() const { return port_; }
  bool roce() const { return port_.linkLayer == LinkLayer::kEthernet; }
  uint16_t lid() const { return lid_; }
  uint8_t mtu() const { return mtu_; }
  int gidIndex() const { return gidIndex_; }
  const std::array<uint8_t, 16>& gid() const { return gid_; }

  // Requests an event for the next completion (ibv_req_notify_cq).
  void arm();
  // Takes and acknowledges the completion events that woke the channel (non-blocking).
  void consumeEvents();

 private:
  void open(int gidIndexRequested, int cqEntries);
  void release();

  int rank_;
  PortInfo port_;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  uint16_t lid_ = 0;
  uint8_t mtu_ = IBV_MTU_1024;
  int gidIndex_ = 0;
  std::array<uint8_t, 16> gid_{};
  unsigned unackedEvents_ = 0;
};

}  // namespace tern::ib
