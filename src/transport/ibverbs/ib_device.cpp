#include "transport/ibverbs/ib_device.hpp"

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/error.hpp"
#include "base/log.hpp"
#include "transport/ibverbs/ib_gid.hpp"

namespace tern::ib {

namespace {

LinkLayer linkLayerOf(const ibv_port_attr& pa) {
  if (pa.link_layer == IBV_LINK_LAYER_ETHERNET) return LinkLayer::kEthernet;
  if (pa.link_layer == IBV_LINK_LAYER_INFINIBAND || pa.link_layer == IBV_LINK_LAYER_UNSPECIFIED) {
    return LinkLayer::kInfiniBand;
  }
  return LinkLayer::kUnknown;
}

std::vector<GidEntry> readGidTable(ibv_context* ctx, int port, int length, bool roce) {
  std::vector<GidEntry> table;
  for (int i = 0; i < length; ++i) {
    GidEntry e;
    e.index = i;
    ibv_gid_entry ex{};
    if (ibv_query_gid_ex(ctx, static_cast<uint32_t>(port), static_cast<uint32_t>(i), &ex, 0) == 0) {
      e.type = ex.gid_type == IBV_GID_TYPE_ROCE_V2   ? GidType::kRoceV2
               : ex.gid_type == IBV_GID_TYPE_ROCE_V1 ? GidType::kRoceV1
                                                     : GidType::kInfiniBand;
      std::memcpy(e.gid.data(), ex.gid.raw, 16);
    } else {
      // Older kernels: no type information (and empty entries fail the query above).
      ibv_gid g{};
      if (ibv_query_gid(ctx, static_cast<uint8_t>(port), i, &g) != 0) continue;
      e.type = roce ? GidType::kRoceV1 : GidType::kInfiniBand;
      std::memcpy(e.gid.data(), g.raw, 16);
    }
    if (!isZeroGid(e.gid)) table.push_back(e);
  }
  return table;
}

}  // namespace

std::vector<PortInfo> enumeratePorts() {
  std::vector<PortInfo> ports;
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list == nullptr) return ports;  // ENOSYS: no RDMA kernel support; treated as "no device"
  for (int d = 0; d < count; ++d) {
    ibv_context* ctx = ibv_open_device(list[d]);
    if (ctx == nullptr) continue;
    ibv_device_attr attr{};
    if (ibv_query_device(ctx, &attr) == 0) {
      for (int p = 1; p <= attr.phys_port_cnt; ++p) {
        ibv_port_attr pa{};
        if (ibv_query_port(ctx, static_cast<uint8_t>(p), &pa) != 0) continue;
        PortInfo info;
        info.device = ibv_get_device_name(list[d]);
        info.port = p;
        info.active = pa.state == IBV_PORT_ACTIVE;
        info.linkLayer = linkLayerOf(pa);
        ports.push_back(info);
      }
    }
    ibv_close_device(ctx);
  }
  ibv_free_device_list(list);
  return ports;
}

Device::Device(const PortInfo& port, int gidIndexRequested, int cqEntries, int rank) : rank_(rank), port_(port) {
  try {
    open(gidIndexRequested, cqEntries);
  } catch (...) {
    release();  // a constructor that throws gets no destructor call
    throw;
  }
  TERN_LOG(kInfo, kNet, rank, "ibverbs: using %s port %d (%s, LID %u, MTU %d, GID index %d)", port.device.c_str(),
           port.port, roce() ? "RoCE" : "InfiniBand", lid_, 128 << mtu_, gidIndex_);
}

void Device::open(int gidIndexRequested, int cqEntries) {
  const PortInfo& port = port_;
  const int rank = rank_;
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list == nullptr) throwSystemError("ibverbs: ibv_get_device_list");
  for (int d = 0; d < count && context_ == nullptr; ++d) {
    if (port.device == ibv_get_device_name(list[d])) context_ = ibv_open_device(list[d]);
  }
  ibv_free_device_list(list);
  if (context_ == nullptr) {
    throwError(ternSystemError, "rank %d: ibverbs: cannot open %s: %s", rank, port.device.c_str(),
               std::strerror(errno));
  }
  ibv_port_attr pa{};
  if (ibv_query_port(context_, static_cast<uint8_t>(port.port), &pa) != 0) {
    throwError(ternSystemError, "rank %d: ibverbs: ibv_query_port(%s:%d) failed", rank, port.device.c_str(), port.port);
  }
  lid_ = pa.lid;
  mtu_ = static_cast<uint8_t>(pa.active_mtu);
  std::vector<GidEntry> table = readGidTable(context_, port.port, pa.gid_tbl_len, roce());
  if (roce() || gidIndexRequested >= 0) {
    gidIndex_ = chooseGidIndex(table, gidIndexRequested, port.device.c_str(), port.port);
  } else {
    gidIndex_ = 0;  // InfiniBand: routed by LID; the GID only identifies the port in logs
  }
  for (const GidEntry& e : table) {
    if (e.index == gidIndex_) gid_ = e.gid;
  }
  pd_ = ibv_alloc_pd(context_);
  if (pd_ == nullptr) throwSystemError("ibverbs: ibv_alloc_pd");
  channel_ = ibv_create_comp_channel(context_);
  if (channel_ == nullptr) throwSystemError("ibverbs: ibv_create_comp_channel");
  // Non-blocking: consumeEvents() drains whatever is there and never waits (poll() is where we sleep).
  int flags = ::fcntl(channel_->fd, F_GETFL);
  if (flags < 0 || ::fcntl(channel_->fd, F_SETFL, flags | O_NONBLOCK) < 0) throwSystemError("ibverbs: fcntl");
  cq_ = ibv_create_cq(context_, cqEntries, nullptr, channel_, 0);
  if (cq_ == nullptr) {
    throwError(ternSystemError, "rank %d: ibverbs: ibv_create_cq(%d entries) on %s failed: %s", rank, cqEntries,
               port.device.c_str(), std::strerror(errno));
  }
  arm();
}

Device::~Device() { release(); }

void Device::release() {
  if (cq_ != nullptr) {
    if (unackedEvents_ > 0) ibv_ack_cq_events(cq_, unackedEvents_);
    ibv_destroy_cq(cq_);
    cq_ = nullptr;
  }
  if (channel_ != nullptr) ibv_destroy_comp_channel(channel_);
  channel_ = nullptr;
  if (pd_ != nullptr) ibv_dealloc_pd(pd_);
  pd_ = nullptr;
  if (context_ != nullptr) ibv_close_device(context_);
  context_ = nullptr;
}

void Device::arm() {
  if (ibv_req_notify_cq(cq_, 0) != 0) throwSystemError("ibverbs: ibv_req_notify_cq");
}

void Device::consumeEvents() {
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  while (ibv_get_cq_event(channel_, &cq, &context) == 0) ++unackedEvents_;
  // Acknowledging takes a mutex inside libibverbs: batch it.
  if (unackedEvents_ >= 64) {
    ibv_ack_cq_events(cq_, unackedEvents_);
    unackedEvents_ = 0;
  }
}

}  // namespace tern::ib
