#include "topo/nvml.hpp"

#include <dlfcn.h>

#include <map>

namespace tern::topo {

namespace {

// The few NVML declarations used here, as in nvml.h (layouts of the _v2/_v3 entry points).
using NvmlDevice = struct nvmlDevice_st*;
using NvmlReturn = int;
constexpr NvmlReturn kNvmlSuccess = 0;
struct NvmlPciInfo {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr unsigned kNvlinkMaxLinks = 18;            // NVML_NVLINK_MAX_LINKS (H100, B200)
constexpr unsigned kNvlinkRemoteGpu = 0;            // NVML_NVLINK_DEVICE_TYPE_GPU
constexpr unsigned kNvlinkRemoteSwitch = 2;         // NVML_NVLINK_DEVICE_TYPE_SWITCH
constexpr unsigned kNvmlDeviceNameBufferSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE

struct NvmlApi {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*handleByBusId)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*name)(NvmlDevice, char*, unsigned) = nullptr;
  NvmlReturn (*computeCapability)(NvmlDevice, int*, int*) = nullptr;
  NvmlReturn (*memory)(NvmlDevice, NvmlMemory*) = nullptr;
  NvmlReturn (*linkState)(NvmlDevice, unsigned, int*) = nullptr;
  NvmlReturn (*remotePci)(NvmlDevice, unsigned, NvmlPciInfo*) = nullptr;
  NvmlReturn (*remoteType)(NvmlDevice, unsigned, unsigned*) = nullptr;  // newer drivers only
  bool ok = false;
};

template <typename F>
void bind(void* lib, const char* symbol, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, symbol));
}

// Opened and initialised once per process; the library stays loaded (NVML dislikes being unloaded and re-inited).
const NvmlApi& nvml() {
  static const NvmlApi api = [] {
    NvmlApi a;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return a;
    bind(lib, "nvmlInit_v2", &a.init);
    bind(lib, "nvmlDeviceGetHandleByPciBusId_v2", &a.handleByBusId);
    bind(lib, "nvmlDeviceGetName", &a.name);
    bind(lib, "nvmlDeviceGetCudaComputeCapability", &a.computeCapability);
    bind(lib, "nvmlDeviceGetMemoryInfo", &a.memory);
    bind(lib, "nvmlDeviceGetNvLinkState", &a.linkState);
    bind(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &a.remotePci);
    bind(lib, "nvmlDeviceGetNvLinkRemoteDeviceType", &a.remoteType);
    a.ok = a.init != nullptr && a.handleByBusId != nullptr && a.init() == kNvmlSuccess;
    return a;
  }();
  return api;
}

}  // namespace

bool addNvmlInfo(HostTopology& host) {
  const NvmlApi& api = nvml();
  if (!api.ok) return false;
  std::map<std::string, int> gpuByBusId;
  for (int g : host.nodesOfType(NodeType::kGpu)) gpuByBusId[host.nodes[g].busId] = g;

  std::map<std::pair<int, int>, int> gpuLinks;  // (gpu, peer gpu) -> links, counted from the first GPU's side
  std::map<int, int> switchLinks;               // gpu -> links to NVSwitches
  for (auto [busId, g] : gpuByBusId) {
    NvmlDevice dev = nullptr;
    if (api.handleByBusId(busId.c_str(), &dev) != kNvmlSuccess) continue;
    Node& gpu = host.nodes[g];
    char name[kNvmlDeviceNameBufferSize] = {};
    if (api.name != nullptr && api.name(dev, name, sizeof(name)) == kNvmlSuccess && name[0] != '\0') gpu.name = name;
    int major = 0, minor = 0;
    if (api.computeCapability != nullptr && api.computeCapability(dev, &major, &minor) == kNvmlSuccess) {
      gpu.sm = major * 10 + minor;
    }
    NvmlMemory mem{};
    if (api.memory != nullptr && api.memory(dev, &mem) == kNvmlSuccess) gpu.memoryBytes = mem.total;
    if (api.linkState == nullptr || api.remotePci == nullptr) continue;
    for (unsigned link = 0; link < kNvlinkMaxLinks; ++link) {
      int active = 0;
      if (api.linkState(dev, link, &active) != kNvmlSuccess || active == 0) continue;
      NvmlPciInfo remote{};
      if (api.remotePci(dev, link, &remote) != kNvmlSuccess) continue;
      const std::string remoteBusId = normalizeBusId(remote.busId);
      auto peer = gpuByBusId.find(remoteBusId);
      unsigned type = peer != gpuByBusId.end() ? kNvlinkRemoteGpu : kNvlinkRemoteSwitch;
      unsigned reported = 0;
      if (api.remoteType != nullptr && api.remoteType(dev, link, &reported) == kNvmlSuccess) type = reported;
      if (type == kNvlinkRemoteGpu && peer != gpuByBusId.end()) {
        if (g < peer->second) ++gpuLinks[{g, peer->second}];
      } else if (type == kNvlinkRemoteSwitch) {
        ++switchLinks[g];
      }
    }
  }
  for (auto [pair, count] : gpuLinks) {
    Link l;
    l.a = pair.first;
    l.b = pair.second;
    l.type = LinkType::kNvlink;
    l.nvlinkCount = count;
    host.addLink(l);
  }
  if (!switchLinks.empty()) {
    int nvs = host.find("nvs0");
    if (nvs < 0) {
      Node fabric;
      fabric.type = NodeType::kNvswitch;
      fabric.id = "nvs0";
      fabric.parent = 0;
      fabric.name = "NVSwitch";
      nvs = host.addNode(fabric);
    }
    for (auto [g, count] : switchLinks) {
      Link l;
      l.a = g;
      l.b = nvs;
      l.type = LinkType::kNvlink;
      l.nvlinkCount = count;
      host.addLink(l);
    }
  }
  return true;
}

}  // namespace tern::topo
