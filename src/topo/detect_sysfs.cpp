// Host detection without hwloc: a minimal host from sysconf and /sys (see detect.hpp). There is no PCIe switch
// structure: GPUs and NICs hang off the package of their NUMA node, so paths between them are PHB or SYS.
#ifndef TERN_HAVE_HWLOC

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "base/error.hpp"
#include "topo/detect.hpp"
#include "topo/detect_util.hpp"
#include "topo/host_id.hpp"
#include "topo/nvml.hpp"
#include "topo/sysfs.hpp"

namespace tern::topo {

namespace {

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}.
std::vector<int> parseCpuList(const std::string& s) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    std::string part = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    int lo = 0, hi = 0;
    int n = std::sscanf(part.c_str(), "%d-%d", &lo, &hi);
    if (n == 1) hi = lo;
    if (n >= 1) {
      for (int c = lo; c <= hi; ++c) out.push_back(c);
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

long readLong(const std::string& path, long fallback) {
  std::string s = sysfs::readLine(path);
  if (s.empty()) return fallback;
  return std::strtol(s.c_str(), nullptr, 0);
}

// The PCI address a sysfs device link resolves to ("/sys/devices/pci0000:00/0000:00:03.0/virtio0" -> the PCI
// function above the virtio device).
std::string pciAddressOf(const std::string& deviceLink) {
  char buf[PATH_MAX];
  if (realpath(deviceLink.c_str(), buf) == nullptr) return "";
  std::string path = buf;
  while (!path.empty()) {
    std::string base = baseName(path);
    unsigned d, b, s, f;
    char tail;
    if (std::sscanf(base.c_str(), "%x:%x:%x.%x%c", &d, &b, &s, &f, &tail) == 4) return base;
    path = path.substr(0, path.find_last_of('/'));
  }
  return "";
}

class SysfsDetector {
 public:
  HostTopology detect() {
    addCpus();
    addNumaNodes();
    addGpus();
    addNics();
    completeHost(host_);
    return std::move(host_);
  }

 private:
  void addCpus() {
    std::vector<int> cpus = parseCpuList(sysfs::readLine("/sys/devices/system/cpu/online"));
    std::map<long, std::set<long>> coresOf;  // package id -> core ids
    std::map<long, int> pusOf;
    for (int cpu : cpus) {
      const std::string dir = format("/sys/devices/system/cpu/cpu%d/topology/", cpu);
      long pkg = readLong(dir + "physical_package_id", 0);
      long core = readLong(dir + "core_id", cpu);
      coresOf[pkg].insert(core);
      ++pusOf[pkg];
      packageOfCpu_[cpu] = pkg;
      coreOfCpu_[cpu] = core;
    }
    if (coresOf.empty()) {
      long n = sysconf(_SC_NPROCESSORS_ONLN);
      if (n <= 0) throwSystemError("sysconf(_SC_NPROCESSORS_ONLN)");
      for (int cpu = 0; cpu < n; ++cpu) {
        coresOf[0].insert(cpu);
        packageOfCpu_[cpu] = 0;
        coreOfCpu_[cpu] = cpu;
      }
      pusOf[0] = static_cast<int>(n);
    }
    std::map<long, std::pair<std::string, std::string>> model = cpuModels();
    for (auto [pkgId, cores] : coresOf) {
      Node pkg;
      pkg.type = NodeType::kPackage;
      pkg.id = format("pkg%ld", pkgId);
      pkg.parent = 0;
      pkg.osIndex = static_cast<int>(pkgId);
      pkg.cores = static_cast<int>(cores.size());
      pkg.pus = pusOf[pkgId];
      std::tie(pkg.vendor, pkg.name) = model[pkgId];
      packageNode_[pkgId] = host_.addNode(pkg);
    }
  }

  // Package id -> (vendor, model name) from /proc/cpuinfo ("vendor_id", "model name", "physical id" lines).
  static std::map<long, std::pair<std::string, std::string>> cpuModels() {
    std::map<long, std::pair<std::string, std::string>> out;
    std::ifstream in("/proc/cpuinfo");
    std::string line, vendor, name;
    auto value = [](const std::string& l) {
      size_t colon = l.find(':');
      return colon == std::string::npos || colon + 2 > l.size() ? std::string() : l.substr(colon + 2);
    };
    while (std::getline(in, line)) {
      if (line.rfind("vendor_id", 0) == 0) vendor = value(line);
      if (line.rfind("model name", 0) == 0) name = value(line);
      if (line.rfind("physical id", 0) == 0)
        out.try_emplace(std::strtol(value(line).c_str(), nullptr, 10), vendor, name);
    }
    if (out.empty() && !name.empty()) out[0] = {vendor, name};  // kernels that print no physical id
    return out;
  }

  void addNumaNodes() {
    for (const std::string& entry : sysfs::listDir("/sys/devices/system/node")) {
      int index = -1;
      char tail;
      if (std::sscanf(entry.c_str(), "node%d%c", &index, &tail) != 1) continue;
      const std::string dir = "/sys/devices/system/node/" + entry;
      Node numa;
      numa.type = NodeType::kNuma;
      numa.id = format("numa%d", index);
      numa.osIndex = index;
      std::set<std::pair<long, long>> cores;
      for (int cpu : parseCpuList(sysfs::readLine(dir + "/cpulist"))) {
        if (!packageOfCpu_.count(cpu)) continue;
        ++numa.pus;
        cores.insert({packageOfCpu_[cpu], coreOfCpu_[cpu]});
        if (numa.parent < 0) numa.parent = packageNode_[packageOfCpu_[cpu]];
      }
      numa.cores = static_cast<int>(cores.size());
      // "Node 0 MemTotal:       5073108 kB"
      std::FILE* f = std::fopen((dir + "/meminfo").c_str(), "r");
      if (f != nullptr) {
        char line[256];
        while (std::fgets(line, sizeof(line), f) != nullptr) {
          unsigned long long kb = 0;
          int node = 0;
          if (std::sscanf(line, "Node %d MemTotal: %llu kB", &node, &kb) == 2) numa.memoryBytes = kb * 1024ULL;
        }
        std::fclose(f);
      }
      numaNode_[index] = host_.addNode(numa);
    }
    if (numaNode_.empty()) {
      Node numa;
      numa.type = NodeType::kNuma;
      numa.id = "numa0";
      numa.osIndex = 0;
      numa.parent = packageNode_.begin()->second;
      numa.cores = host_.totalCores();
      numa.pus = host_.totalPus();
      long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
      if (pages > 0 && pageSize > 0) numa.memoryBytes = static_cast<uint64_t>(pages) * pageSize;
      numaNode_[0] = host_.addNode(numa);
    }
  }

  // The package a PCI device is local to, by its NUMA node (the first package when the kernel does not say).
  int packageForPci(const std::string& busId) {
    long numa = readLong("/sys/bus/pci/devices/" + busId + "/numa_node", -1);
    auto it = numaNode_.find(static_cast<int>(numa));
    if (it != numaNode_.end() && host_.nodes[it->second].parent >= 0) return host_.nodes[it->second].parent;
    return packageNode_.begin()->second;
  }

  void addPciLink(int node) {
    Link l;
    l.a = host_.nodes[node].parent;
    l.b = node;
    l.type = LinkType::kPcie;
    if (sysfs::pcieLink(host_.nodes[node].busId, &l.pcieGen, &l.pcieWidth)) {
      l.bandwidth = pcieBandwidth(l.pcieGen, l.pcieWidth);
    } else {
      l.pcieGen = l.pcieWidth = 0;
    }
    host_.addLink(l);
  }

  void addGpus() {
    for (const std::string& busId : sysfs::listDir("/sys/bus/pci/devices")) {
      const std::string dir = "/sys/bus/pci/devices/" + busId;
      long vendor = readLong(dir + "/vendor", 0);
      long cls = readLong(dir + "/class", 0);  // 0x030200: class, subclass, prog-if
      if (!isNvidiaGpu(static_cast<uint16_t>(vendor), static_cast<uint16_t>(cls >> 8))) continue;
      Node gpu;
      gpu.type = NodeType::kGpu;
      gpu.id = "gpu-" + busId;
      gpu.busId = busId;
      gpu.name = format("NVIDIA GPU [10de:%04lx]", readLong(dir + "/device", 0));
      gpu.parent = packageForPci(busId);
      addPciLink(host_.addNode(gpu));
    }
  }

  void addNics() {
    std::set<std::string> rdmaNetdevs;
    std::set<std::string> rdmaBusIds;
    for (const std::string& dev : sysfs::listDir("/sys/class/infiniband")) {
      std::string busId = pciAddressOf("/sys/class/infiniband/" + dev + "/device");
      if (busId.empty()) continue;  // soft RoCE / iWARP emulation: not a device of its own
      sysfs::RdmaPort port = sysfs::rdmaPort(dev, 1);
      Node nic;
      nic.type = NodeType::kNic;
      nic.id = "nic-" + dev;
      nic.name = dev;
      nic.busId = busId;
      nic.port = 1;
      nic.netKind = port.kind == NetKind::kUnknown ? NetKind::kInfiniband : port.kind;
      nic.speedGbps = port.speedGbps;
      nic.netdev = port.netdev;
      nic.guid = sysfs::readLine("/sys/class/infiniband/" + dev + "/node_guid");
      nic.gdr = sysfs::gpuDirectRdma();
      nic.parent = packageForPci(busId);
      addPciLink(host_.addNode(nic));
      rdmaBusIds.insert(busId);
      if (!port.netdev.empty()) rdmaNetdevs.insert(port.netdev);
    }
    for (const std::string& ifname : sysfs::listDir("/sys/class/net")) {
      if (rdmaNetdevs.count(ifname)) continue;
      std::string busId = pciAddressOf("/sys/class/net/" + ifname + "/device");
      if (busId.empty() || rdmaBusIds.count(busId)) continue;  // virtual interfaces have no device
      Node nic;
      nic.type = NodeType::kNic;
      nic.id = "nic-" + ifname;
      nic.name = ifname;
      nic.netdev = ifname;
      nic.busId = busId;
      nic.netKind = NetKind::kEthernet;
      nic.speedGbps = sysfs::netdevSpeedGbps(ifname);
      nic.parent = packageForPci(busId);
      addPciLink(host_.addNode(nic));
    }
  }

  HostTopology host_;
  std::map<int, long> packageOfCpu_;
  std::map<int, long> coreOfCpu_;
  std::map<long, int> packageNode_;  // package id -> node
  std::map<int, int> numaNode_;      // NUMA OS index -> node
};

}  // namespace

HostTopology detectHost() {
  HostTopology host = SysfsDetector().detect();
  host.id = hostId();
  host.hostname = hostName();
  addNvmlInfo(host);
  canonicalizeDevices(host);
  completeHost(host);
  return host;
}

HostTopology loadHwlocXml(const std::string& path) {
  throwError(ternInvalidArgument, "%s: reading hwloc XML needs hwloc, and this tern was built without it",
             path.c_str());
}

HostTopology parseHwlocXml(std::string_view, const std::string& source) { return loadHwlocXml(source); }

}  // namespace tern::topo

#endif  // !TERN_HAVE_HWLOC
