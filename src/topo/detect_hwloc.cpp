// Host detection and hwloc XML loading with hwloc (see detect.hpp for the model it builds).
#ifdef TERN_HAVE_HWLOC

#include <hwloc.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <memory>
#include <pugixml.hpp>
#include <sstream>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "base/error.hpp"
#include "topo/detect.hpp"
#include "topo/detect_util.hpp"
#include "topo/host_id.hpp"
#include "topo/nvml.hpp"
#include "topo/sysfs.hpp"

namespace tern::topo {

namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;
using PciAttr = hwloc_obj_attr_u::hwloc_pcidev_attr_s;  // nested in the attribute union, hence scoped in C++

std::string busIdOf(const PciAttr& pci) { return format("%04x:%02x:%02x.%x", pci.domain, pci.bus, pci.dev, pci.func); }

const char* info(hwloc_obj_t obj, const char* name) {
  const char* v = hwloc_obj_get_info_by_name(obj, name);
  return v != nullptr ? v : "";
}

int countInside(hwloc_topology_t topo, hwloc_const_cpuset_t set, hwloc_obj_type_t type) {
  return set != nullptr ? hwloc_get_nbobjs_inside_cpuset_by_type(topo, set, type) : 0;
}

// Where a bridge sits decides what it is (see detect.hpp): right under a host bridge it is a root port, below a root
// port or a downstream port it is a switch's upstream port, below an upstream port it is a downstream port.
enum class PciLevel { kRootComplex, kBelowDownstreamPort, kInsideSwitch };

class HwlocConverter {
 public:
  HwlocConverter(hwloc_topology_t topo, bool live) : topo_(topo), live_(live) {}

  HostTopology convert() {
    hwloc_obj_t root = hwloc_get_root_obj(topo_);
    host_.hostname = info(root, "HostName");
    addPackages();
    addNumaNodes();
    walkIo(root);
    pruneEmptySwitches(host_);
    completeHost(host_);
    return std::move(host_);
  }

 private:
  void addPackages() {
    const int n = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_PACKAGE);
    for (int i = 0; i < n; ++i) {
      hwloc_obj_t obj = hwloc_get_obj_by_type(topo_, HWLOC_OBJ_PACKAGE, i);
      Node pkg;
      pkg.type = NodeType::kPackage;
      pkg.id = format("pkg%d", i);
      pkg.parent = 0;
      pkg.osIndex = static_cast<int>(obj->os_index);
      pkg.vendor = info(obj, "CPUVendor");
      pkg.name = info(obj, "CPUModel");
      setCpuCounts(obj->cpuset, &pkg);
      packages_.emplace_back(obj, host_.addNode(pkg));
    }
    if (packages_.empty()) {
      // Some platforms (VMs, ARM boards) expose no package: the whole machine is one.
      hwloc_obj_t root = hwloc_get_root_obj(topo_);
      Node pkg;
      pkg.type = NodeType::kPackage;
      pkg.id = "pkg0";
      pkg.parent = 0;
      pkg.osIndex = 0;
      setCpuCounts(root->cpuset, &pkg);
      packages_.emplace_back(root, host_.addNode(pkg));
    }
  }

  void addNumaNodes() {
    const int n = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_NUMANODE);
    for (int i = 0; i < n; ++i) {
      hwloc_obj_t obj = hwloc_get_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, i);
      Node numa;
      numa.type = NodeType::kNuma;
      numa.id = format("numa%d", i);
      numa.parent = packageFor(obj);
      numa.osIndex = static_cast<int>(obj->os_index);
      numa.memoryBytes = obj->attr->numanode.local_memory;
      setCpuCounts(obj->cpuset, &numa);
      host_.addNode(numa);
    }
  }

  void setCpuCounts(hwloc_const_cpuset_t set, Node* node) {
    node->pus = countInside(topo_, set, HWLOC_OBJ_PU);
    node->cores = countInside(topo_, set, HWLOC_OBJ_CORE);
    if (node->cores == 0) node->cores = node->pus;  // platforms without core objects
  }

  // The package node an object (normal, memory or I/O) belongs to: the package among its ancestors, else the first
  // package its CPUs intersect, else the first package.
  int packageFor(hwloc_obj_t obj) {
    hwloc_obj_t normal = obj->type == HWLOC_OBJ_NUMANODE ? obj->parent : hwloc_get_non_io_ancestor_obj(topo_, obj);
    for (hwloc_obj_t o = normal; o != nullptr; o = o->parent) {
      for (auto [pkgObj, node] : packages_) {
        if (o == pkgObj) return node;
      }
    }
    if (normal != nullptr && normal->cpuset != nullptr) {
      for (auto [pkgObj, node] : packages_) {
        if (pkgObj->cpuset != nullptr && hwloc_bitmap_intersects(pkgObj->cpuset, normal->cpuset)) return node;
      }
    }
    return packages_[0].second;
  }

  // Visits the normal objects depth first and converts the I/O subtrees hanging off each.
  void walkIo(hwloc_obj_t obj) {
    for (hwloc_obj_t io = obj->io_first_child; io != nullptr; io = io->next_sibling) {
      addIo(io, packageFor(io), PciLevel::kRootComplex);
    }
    for (unsigned i = 0; i < obj->arity; ++i) walkIo(obj->children[i]);
  }

  void addIo(hwloc_obj_t obj, int parent, PciLevel level) {
    if (obj->type == HWLOC_OBJ_BRIDGE) {
      // Read as its underlying integer: an XML topology can carry a value outside the enum, and loading such a
      // value as the enum type is undefined behaviour.
      std::underlying_type_t<hwloc_obj_bridge_type_t> upstream;
      std::memcpy(&upstream, &obj->attr->bridge.upstream_type, sizeof upstream);
      if (upstream == HWLOC_OBJ_BRIDGE_HOST) {
        for (hwloc_obj_t c = obj->io_first_child; c != nullptr; c = c->next_sibling) addIo(c, parent, level);
        return;
      }
      if (level == PciLevel::kBelowDownstreamPort) {
        const PciAttr& up = obj->attr->bridge.upstream.pci;
        Node sw;
        sw.type = NodeType::kPciSwitch;
        sw.id = format("sw%d", switches_++);
        sw.parent = parent;
        sw.busId = busIdOf(up);
        sw.name = info(obj, "PCIDevice");
        const int node = host_.addNode(sw);
        linkToParent(node, up.linkspeed);
        for (hwloc_obj_t c = obj->io_first_child; c != nullptr; c = c->next_sibling) {
          addIo(c, node, PciLevel::kInsideSwitch);
        }
        return;
      }
      // A root port or a switch's downstream port: part of its parent, not a node of its own.
      for (hwloc_obj_t c = obj->io_first_child; c != nullptr; c = c->next_sibling) {
        addIo(c, parent, PciLevel::kBelowDownstreamPort);
      }
      return;
    }
    if (obj->type == HWLOC_OBJ_PCI_DEVICE) addPciDevice(obj, parent);
  }

  void addPciDevice(hwloc_obj_t obj, int parent) {
    const PciAttr& pci = obj->attr->pcidev;
    const std::string busId = busIdOf(pci);
    if (isNvidiaGpu(pci.vendor_id, pci.class_id)) {
      Node gpu;
      gpu.type = NodeType::kGpu;
      gpu.parent = parent;
      gpu.busId = busId;
      gpu.name = info(obj, "PCIDevice");
      if (gpu.name.empty()) gpu.name = format("NVIDIA GPU [10de:%04x]", pci.device_id);
      // hwloc's CUDA/NVML plugins, when built in, name the GPU's OS devices cuda<N> / nvml<N>.
      for (hwloc_obj_t c = obj->io_first_child; c != nullptr; c = c->next_sibling) {
        if (c->name != nullptr && std::strncmp(c->name, "cuda", 4) == 0) gpu.osIndex = std::atoi(c->name + 4);
      }
      linkToParent(host_.addNode(gpu), pci.linkspeed);
      return;
    }
    // A NIC is a PCI function the kernel drives as an RDMA device or a network interface; a card without a loaded
    // driver is of no use to us.
    std::vector<hwloc_obj_t> rdma, net;
    for (hwloc_obj_t c = obj->io_first_child; c != nullptr; c = c->next_sibling) {
      if (c->type != HWLOC_OBJ_OS_DEVICE || c->name == nullptr) continue;
      if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) rdma.push_back(c);
      if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK) net.push_back(c);
    }
    // PCI class 0x0207 is an InfiniBand network controller; older HCAs report 0x0c06 (InfiniBand serial bus).
    const bool ibClass = pci.class_id == 0x0207 || pci.class_id == 0x0c06;
    for (hwloc_obj_t dev : rdma) {
      Node nic;
      nic.type = NodeType::kNic;
      nic.parent = parent;
      nic.busId = busId;
      nic.name = dev->name;
      nic.port = 1;
      nic.guid = info(dev, "NodeGUID");
      nic.netKind = ibClass ? NetKind::kInfiniband : NetKind::kRoce;
      if (!net.empty()) nic.netdev = net[0]->name;
      if (live_) {
        sysfs::RdmaPort port = sysfs::rdmaPort(nic.name, 1);
        if (port.kind != NetKind::kUnknown) nic.netKind = port.kind;
        nic.speedGbps = port.speedGbps;
        if (!port.netdev.empty()) nic.netdev = port.netdev;
        nic.gdr = sysfs::gpuDirectRdma();
      }
      linkToParent(host_.addNode(nic), pci.linkspeed);
    }
    if (!rdma.empty()) return;
    for (hwloc_obj_t dev : net) {
      Node nic;
      nic.type = NodeType::kNic;
      nic.parent = parent;
      nic.busId = busId;
      nic.name = dev->name;
      nic.netdev = dev->name;
      nic.netKind = NetKind::kEthernet;
      if (live_) nic.speedGbps = sysfs::netdevSpeedGbps(nic.name);
      linkToParent(host_.addNode(nic), pci.linkspeed);
    }
  }

  // The PCIe link of a new node to its parent: generation and width from sysfs on a live system, else hwloc's raw
  // link speed converted to a practical figure; 0 when neither is known (completeHost() then uses the default).
  void linkToParent(int node, float rawGBs) {
    Link l;
    l.a = host_.nodes[node].parent;
    l.b = node;
    l.type = LinkType::kPcie;
    if (live_ && sysfs::pcieLink(host_.nodes[node].busId, &l.pcieGen, &l.pcieWidth)) {
      l.bandwidth = pcieBandwidth(l.pcieGen, l.pcieWidth);
    } else {
      l.pcieGen = l.pcieWidth = 0;
      l.bandwidth = pcieBandwidthFromRaw(rawGBs);
    }
    host_.addLink(l);
  }

  hwloc_topology_t topo_;
  bool live_;
  HostTopology host_;
  std::vector<std::pair<hwloc_obj_t, int>> packages_;  // hwloc package -> node index
  int switches_ = 0;
};

// hwloc loads its plugins (dlopen of libxml2, OpenCL, X11, libpciaccess, ...) when the first topology of the process
// is initialised and unloads them when the last is destroyed, so every file import would load them all again (the
// cost of an import, many times the parse), and each unload of the PCI plugin leaves what libpciaccess allocated
// unreachable. One topology kept for the life of the process keeps them loaded once.
void keepHwlocPluginsLoaded() {
  static const hwloc_topology_t keeper = [] {
    hwloc_topology_t t = nullptr;
    return hwloc_topology_init(&t) == 0 ? t : nullptr;
  }();
  (void)keeper;
}

TopologyPtr newTopology() {
  keepHwlocPluginsLoaded();
  hwloc_topology_t t = nullptr;
  if (hwloc_topology_init(&t) != 0) throwSystemError("hwloc_topology_init");
  TopologyPtr topo(t);
  // The default filter drops every PCI device; KEEP_IMPORTANT keeps GPUs, NICs and the bridges above them.
  hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  return topo;
}

}  // namespace

HostTopology detectHost() {
  TopologyPtr topo = newTopology();
  // Count every online CPU, not only those this process's cgroup may use: the topology describes the hardware.
  hwloc_topology_set_flags(topo.get(), HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  // Every communicator init detects (once per process), so skip the plugins that initialise device runtimes or
  // connect to display servers to name OS devices tern does not use: GPUs come from PCI and NVML (topo/nvml.hpp).
  // A name this hwloc does not have is simply not there to skip.
  for (const char* plugin : {"opencl", "cuda", "nvml", "rsmi", "levelzero", "gl"}) {
    hwloc_topology_set_components(topo.get(), HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, plugin);
  }
  if (hwloc_topology_load(topo.get()) != 0) throwSystemError("hwloc_topology_load");
  HostTopology host = HwlocConverter(topo.get(), /*live=*/true).convert();
  host.id = hostId();
  host.hostname = hostName();
  addNvmlInfo(host);
  canonicalizeDevices(host);
  completeHost(host);
  return host;
}

namespace {

// hwloc takes the buffer's size as an int; no machine's export comes near this.
constexpr size_t kMaxHwlocXmlBytes = size_t{256} << 20;
// Importing even a large machine's export takes milliseconds; a child still busy after this is stuck in a loop.
constexpr auto kHwlocImportDeadline = std::chrono::seconds(30);
// The child's exit codes: imported and converted, or refused with an exception (which this process then reproduces
// for its message). Anything else (a signal, a sanitizer's exit code, a deadline) is a crash.
constexpr int kChildImported = 0;
constexpr int kChildRejected = 3;

// Bounds on what hwloc is handed, checked first: hwloc sizes a cpuset or nodeset by the largest OS index it sets
// and takes a PU or NUMA node without an os_index as index 2^32 - 1, so a few bytes make it allocate and clear up to
// a gigabyte (seconds of work), and it imports nested objects recursively. No machine comes near these.
constexpr unsigned long kMaxHwlocOsIndex = 1ul << 20;
constexpr int kMaxHwlocObjectDepth = 128;

long lineAt(std::string_view text, ptrdiff_t offset) {
  const auto end = text.begin() + std::clamp<ptrdiff_t>(offset, 0, static_cast<ptrdiff_t>(text.size()));
  return 1 + static_cast<long>(std::count(text.begin(), end, '\n'));
}

// Refuses, naming the line, objects nested deeper than kMaxHwlocObjectDepth, an os_index that is not a decimal
// number up to kMaxHwlocOsIndex, and a PU or NUMA node without one. A document pugixml cannot parse is left to
// hwloc, which refuses it with its own message; everything else is hwloc's to judge too.
void checkHwlocXmlBounds(std::string_view text, const std::string& source) {
  pugi::xml_document doc;
  if (!doc.load_buffer(text.data(), text.size(), pugi::parse_default, pugi::encoding_utf8)) return;
  std::vector<std::pair<pugi::xml_node, int>> pending{{doc.document_element(), 0}};
  while (!pending.empty()) {
    const auto [node, outer] = pending.back();
    pending.pop_back();
    const bool object = std::string_view(node.name()) == "object";
    const int depth = outer + (object ? 1 : 0);
    if (object) {
      const long line = lineAt(text, node.offset_debug());
      if (depth > kMaxHwlocObjectDepth) {
        throwError(ternInvalidArgument, "%s: line %ld: objects nested more than %d deep; the file is malformed",
                   source.c_str(), line, kMaxHwlocObjectDepth);
      }
      const pugi::xml_attribute index = node.attribute("os_index");
      const std::string_view type = node.attribute("type").value();
      if (!index && (type == "PU" || type == "NUMANode")) {
        throwError(ternInvalidArgument, "%s: line %ld: a %.*s object without an os_index; the file is malformed",
                   source.c_str(), line, static_cast<int>(type.size()), type.data());
      }
      if (index) {
        const std::string_view v = index.value();
        const bool digits =
            !v.empty() && v.size() <= 7 && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (!digits || std::stoul(std::string(v)) > kMaxHwlocOsIndex) {
          throwError(ternInvalidArgument,
                     "%s: line %ld: os_index \"%.*s\" is not a number up to %lu; the file is "
                     "malformed",
                     source.c_str(), line, static_cast<int>(std::min<size_t>(v.size(), 32)), v.data(),
                     kMaxHwlocOsIndex);
        }
      }
    }
    // Children pushed last first, so the first offending object in document order is the one reported.
    for (pugi::xml_node child = node.last_child(); child; child = child.previous_sibling()) {
      if (child.type() == pugi::node_element) pending.emplace_back(child, depth);
    }
  }
}

// Imports and converts; every rejection is an Error. `text` must be followed by a NUL (std::string's is), which
// hwloc's buffer size includes.
HostTopology importHwlocXml(std::string_view text, const std::string& source) {
  TopologyPtr topo = newTopology();
  if (hwloc_topology_set_xmlbuffer(topo.get(), text.data(), static_cast<int>(text.size() + 1)) != 0) {
    throwError(ternInvalidArgument, "%s: hwloc cannot read it as an XML topology (%s)", source.c_str(),
               std::strerror(errno));
  }
  if (hwloc_topology_load(topo.get()) != 0) {
    throwError(ternInvalidArgument, "%s: hwloc rejected the XML topology (%s)", source.c_str(), std::strerror(errno));
  }
  HostTopology host = HwlocConverter(topo.get(), /*live=*/false).convert();
  host.id = host.hostname.empty() ? baseName(source) : host.hostname;
  canonicalizeDevices(host);
  completeHost(host);
  return host;
}

// Runs the import in a forked child (see detect.hpp for why); throws when the child did not end with either of its
// two clean outcomes. The child only imports and leaves by the exit_group system call itself: no atexit handler,
// stdio flush or sanitizer finalisation runs in it (ThreadSanitizer intercepts _exit and would report the parent's
// finished but not yet joined threads, which the child inherits only as bookkeeping, as leaked), and crash signals
// kill it quietly instead of reaching handlers (a sanitizer's, a fuzzer's, the application's) that belong to the
// parent.
void importInChild(const std::string& text, const std::string& source) {
  const pid_t pid = ::fork();
  if (pid < 0) throwSystemError("fork (to import an hwloc XML file)");
  if (pid == 0) {
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP}) std::signal(sig, SIG_DFL);
    int code = kChildImported;
    try {
      importHwlocXml(text, source);
    } catch (...) {
      code = kChildRejected;
    }
    ::syscall(SYS_exit_group, code);
    ::_exit(code);  // not reached
  }
  const auto deadline = std::chrono::steady_clock::now() + kHwlocImportDeadline;
  auto pause = std::chrono::microseconds(100);
  int status = 0;
  bool timedOut = false;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, timedOut ? 0 : WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) throwSystemError("waitpid (hwloc XML import)");
    if (r == 0 && std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      timedOut = true;
      continue;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10000));
  }
  if (timedOut) {
    throwError(ternInvalidArgument, "%s: hwloc did not finish importing it within %lld s; the file is malformed",
               source.c_str(), static_cast<long long>(kHwlocImportDeadline.count()));
  }
  if (WIFEXITED(status) && (WEXITSTATUS(status) == kChildImported || WEXITSTATUS(status) == kChildRejected)) return;
  if (WIFSIGNALED(status)) {
    throwError(ternInvalidArgument, "%s: hwloc crashed importing it (signal %d, %s); the file is malformed",
               source.c_str(), WTERMSIG(status), strsignal(WTERMSIG(status)));
  }
  throwError(ternInvalidArgument, "%s: hwloc failed importing it (exit code %d); the file is malformed", source.c_str(),
             WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

}  // namespace

HostTopology parseHwlocXml(std::string_view text, const std::string& source) {
  if (text.size() > kMaxHwlocXmlBytes) {
    throwError(ternInvalidArgument, "%s: %zu bytes is too large for an hwloc XML topology (at most %zu)",
               source.c_str(), text.size(), kMaxHwlocXmlBytes);
  }
  checkHwlocXmlBounds(text, source);
  const std::string owned(text);  // NUL-terminated, as hwloc's buffer import wants
  importInChild(owned, source);
  return importHwlocXml(owned, source);
}

HostTopology loadHwlocXml(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throwError(ternInvalidArgument, "%s: cannot open: %s", path.c_str(), std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throwError(ternInvalidArgument, "%s: cannot read: %s", path.c_str(), std::strerror(errno));
  return parseHwlocXml(buf.str(), path);
}

}  // namespace tern::topo

#endif  // TERN_HAVE_HWLOC
