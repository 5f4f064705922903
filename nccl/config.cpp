// ncclConfig_t translated into ternConfig_t: every field honoured, harmless on the host path, or refused by name.
#include <cstddef>

#include "shim_internal.hpp"

namespace tern::nccl {
namespace {

constexpr unsigned kConfigMagic = 0xcafebeef;  // NCCL_API_MAGIC of every nccl.h since 2.14

}  // namespace

// ncclConfig_t of nccl.h 2.30 (ncclConfig_v23000). Older headers' structs are prefixes of it (2.28's ends at
// nvlinkCentricSched), so a field is read only when the caller's size covers it.
struct ConfigV23000 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
  int graphUsageMode;
  int numRmaCtx;
  int maxP2pPeers;
  int graphStreamOrdering;
};
// The header this library is compiled against must agree with the layout read here.
static_assert(offsetof(ncclConfig_t, blocking) == offsetof(ConfigV23000, blocking));
static_assert(offsetof(ncclConfig_t, netName) == offsetof(ConfigV23000, netName));
static_assert(offsetof(ncclConfig_t, trafficClass) == offsetof(ConfigV23000, trafficClass));
static_assert(offsetof(ncclConfig_t, commName) == offsetof(ConfigV23000, commName));
static_assert(offsetof(ncclConfig_t, nvlinkCentricSched) == offsetof(ConfigV23000, nvlinkCentricSched));
static_assert(sizeof(ncclConfig_t) <= sizeof(ConfigV23000));

#define CONFIG_HAS(cfg, field) ((cfg)->size >= offsetof(ConfigV23000, field) + sizeof((cfg)->field))

ncclResult_t translateConfig(const ncclConfig_t* userConfig, ternConfig_t* out, CommState* state, const char* fn) {
  *out = TERN_CONFIG_INITIALIZER;
  if (userConfig == nullptr) return ncclSuccess;
  const ConfigV23000* c = reinterpret_cast<const ConfigV23000*>(userConfig);
  if (c->magic != kConfigMagic) {
    return fail(ncclInvalidArgument, "%s: config was not set with NCCL_CONFIG_INITIALIZER (magic 0x%x)", fn, c->magic);
  }
  if (c->size < offsetof(ConfigV23000, netName)) {
    return fail(ncclInvalidArgument, "%s: config size %zu is smaller than any nccl.h's ncclConfig_t", fn, c->size);
  }
  if (CONFIG_HAS(c, blocking) && c->blocking != NCCL_CONFIG_UNDEF_INT) {
    if (c->blocking != 0 && c->blocking != 1) {
      return fail(ncclInvalidArgument, "%s: config blocking=%d (must be 0 or 1)", fn, c->blocking);
    }
    // Nonblocking: every call still completes before it returns, and returns ncclSuccess rather than
    // ncclInProgress, which NCCL's nonblocking contract allows for work that is done.
    state->nonblocking = c->blocking == 0;
  }
  if (CONFIG_HAS(c, netName) && c->netName != nullptr) {
    return fail(ncclInvalidUsage,
                "%s: config netName='%s' is not supported: tern picks one network per process (TERN_TRANSPORT, or "
                "NCCL_NET mapped at load); leave netName unset",
                fn, c->netName);
  }
  if (CONFIG_HAS(c, trafficClass) && c->trafficClass != NCCL_CONFIG_UNDEF_INT) {
    return fail(ncclInvalidUsage,
                "%s: config trafficClass=%d is not supported per communicator: set TERN_IB_TC (or NCCL_IB_TC) for "
                "the process",
                fn, c->trafficClass);
  }
  if (CONFIG_HAS(c, commName) && c->commName != nullptr) {
    state->commName = c->commName;
    out->commName = state->commName.c_str();
  }
  // GPU launch shape (CTAs, clusters, channels, NVLS/NVLink scheduling, CUDA-graph modes, RMA contexts), resource
  // sharing of split/shrink and CollNet are hints about device kernels and NCCL's own resources: none exists on
  // the host path, so they change nothing here (docs/NCCL.md). Values outside NCCL's range are still refused.
  struct Hint {
    const char* name;
    bool present;
    int value;
    int min;
  };
  const Hint hints[] = {
      {"cgaClusterSize", CONFIG_HAS(c, cgaClusterSize), CONFIG_HAS(c, cgaClusterSize) ? c->cgaClusterSize : 0, 0},
      {"minCTAs", CONFIG_HAS(c, minCTAs), CONFIG_HAS(c, minCTAs) ? c->minCTAs : 0, 1},
      {"maxCTAs", CONFIG_HAS(c, maxCTAs), CONFIG_HAS(c, maxCTAs) ? c->maxCTAs : 0, 1},
      {"splitShare", CONFIG_HAS(c, splitShare), CONFIG_HAS(c, splitShare) ? c->splitShare : 0, 0},
      {"collnetEnable", CONFIG_HAS(c, collnetEnable), CONFIG_HAS(c, collnetEnable) ? c->collnetEnable : 0, 0},
      {"CTAPolicy", CONFIG_HAS(c, CTAPolicy), CONFIG_HAS(c, CTAPolicy) ? c->CTAPolicy : 0, 0},
      {"shrinkShare", CONFIG_HAS(c, shrinkShare), CONFIG_HAS(c, shrinkShare) ? c->shrinkShare : 0, 0},
      {"nvlsCTAs", CONFIG_HAS(c, nvlsCTAs), CONFIG_HAS(c, nvlsCTAs) ? c->nvlsCTAs : 0, 1},
      {"nChannelsPerNetPeer", CONFIG_HAS(c, nChannelsPerNetPeer),
       CONFIG_HAS(c, nChannelsPerNetPeer) ? c->nChannelsPerNetPeer : 0, 1},
      {"nvlinkCentricSched", CONFIG_HAS(c, nvlinkCentricSched),
       CONFIG_HAS(c, nvlinkCentricSched) ? c->nvlinkCentricSched : 0, 0},
      {"graphUsageMode", CONFIG_HAS(c, graphUsageMode), CONFIG_HAS(c, graphUsageMode) ? c->graphUsageMode : 0, 0},
      {"numRmaCtx", CONFIG_HAS(c, numRmaCtx), CONFIG_HAS(c, numRmaCtx) ? c->numRmaCtx : 0, 0},
      {"maxP2pPeers", CONFIG_HAS(c, maxP2pPeers), CONFIG_HAS(c, maxP2pPeers) ? c->maxP2pPeers : 0, 0},
      {"graphStreamOrdering", CONFIG_HAS(c, graphStreamOrdering),
       CONFIG_HAS(c, graphStreamOrdering) ? c->graphStreamOrdering : 0, 0},
  };
  for (const Hint& h : hints) {
    if (h.present && h.value != NCCL_CONFIG_UNDEF_INT && h.value < h.min) {
      return fail(ncclInvalidArgument, "%s: config %s=%d is out of range (at least %d)", fn, h.name, h.value, h.min);
    }
  }
  return ncclSuccess;
}

}  // namespace tern::nccl
