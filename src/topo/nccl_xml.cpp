#include "topo/nccl_xml.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdlib>
#include <map>
#include <pugixml.hpp>

#include "base/error.hpp"
#include "topo/detect_util.hpp"

namespace tern::topo {

namespace {

constexpr long kNvswitchClass = 0x068000;  // what NCCL writes as the tclass of an NVLink to an NVSwitch
constexpr long kCpuClass = 0x060400;       // ... and to a CPU (POWER9's NVLink-attached CPUs)

class NcclXmlReader {
 public:
  explicit NcclXmlReader(const std::string& source) : source_(source) {}

  JobTopology read(std::string_view text) {
    pugi::xml_document doc;
    pugi::xml_parse_result parsed = doc.load_buffer(text.data(), text.size());
    if (!parsed) fail(format("XML parse error at byte %td: %s", parsed.offset, parsed.description()));
    pugi::xml_node system = doc.child("system");
    if (!system) {
      fail(format("not an NCCL topology: the root element is <%s>, not <system>", doc.document_element().name()));
    }
    host_.id = baseName(source_);
    for (pugi::xml_node cpu : system.children("cpu")) addCpu(cpu);
    if (host_.count(NodeType::kPackage) == 0) fail("no <cpu> element under <system>");
    addNvlinks();
    completeHost(host_);

    JobTopology job;
    job.name = host_.id;
    job.hosts.push_back(std::move(host_));
    job.network = deriveNetwork(job.hosts);
    job.network.latencyUs = defaultNetLatencyUs(job.network.kind);
    job.ranks = ranks_.empty() ? defaultRanks(job.hosts) : rankPlacements();
    validate(job, source_);
    return job;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw Error(ternInvalidArgument, source_ + ": " + what); }

  // Integer attribute (decimal or 0x-hex); `def` when absent, an error when present but not a number.
  long intAttr(pugi::xml_node node, const char* name, long def) const {
    pugi::xml_attribute a = node.attribute(name);
    if (!a) return def;
    const char* s = a.value();
    char* end = nullptr;
    long v = std::strtol(s, &end, 0);
    if (end == s || *end != '\0') {
      fail(format("<%s %s=\"%s\"> at byte %td: not an integer", node.name(), name, s, node.offset_debug()));
    }
    return v;
  }

  double numberAttr(pugi::xml_node node, const char* name, double def) const {
    pugi::xml_attribute a = node.attribute(name);
    if (!a) return def;
    const char* s = a.value();
    char* end = nullptr;
    double v = std::strtod(s, &end);
    if (end == s) fail(format("<%s %s=\"%s\"> at byte %td: not a number", node.name(), name, s, node.offset_debug()));
    return v;
  }

  void addCpu(pugi::xml_node cpu) {
    const int ordinal = host_.count(NodeType::kPackage);
    const long numaId = intAttr(cpu, "numaid", ordinal);
    // affinity: hex CPU mask in 32-bit words separated by commas ("ffffffff,00000000").
    int pus = 0;
    for (const char* p = cpu.attribute("affinity").value(); *p != '\0'; ++p) {
      if (*p == ',') continue;
      if (!std::isxdigit(static_cast<unsigned char>(*p))) fail(format("<cpu numaid=\"%ld\">: bad affinity", numaId));
      pus += std::popcount(static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(*p))
                                                     ? *p - '0'
                                                     : std::tolower(static_cast<unsigned char>(*p)) - 'a' + 10));
    }
    Node pkg;
    pkg.type = NodeType::kPackage;
    pkg.id = format("pkg%d", ordinal);
    pkg.parent = 0;
    pkg.osIndex = static_cast<int>(numaId);
    pkg.vendor = cpu.attribute("vendor").value();
    if (cpu.attribute("familyid")) {
      pkg.name = format("%s family %ld model %ld", cpu.attribute("arch").value(), intAttr(cpu, "familyid", 0),
                        intAttr(cpu, "modelid", 0));
    }
    pkg.cores = pkg.pus = pus;  // NCCL records hardware threads only
    const int pkgNode = host_.addNode(pkg);

    Node numa;
    numa.type = NodeType::kNuma;
    numa.id = format("numa%ld", numaId);
    if (host_.find(numa.id) >= 0) fail(format("two <cpu> elements with numaid=\"%ld\"", numaId));
    numa.parent = pkgNode;
    numa.osIndex = static_cast<int>(numaId);
    numa.cores = numa.pus = pus;
    host_.addNode(numa);

    for (pugi::xml_node child : cpu.children()) {
      if (std::string_view(child.name()) == "pci") addPci(child, pkgNode);
      if (std::string_view(child.name()) == "nic") addNics(child, pkgNode, Link{}, -1);
    }
  }

  void addPci(pugi::xml_node pci, int parent) {
    const std::string busId = normalizeBusId(pci.attribute("busid").value());
    if (busId.empty()) fail(format("<pci> at byte %td has no busid", pci.offset_debug()));
    const long cls = intAttr(pci, "class", 0);
    Link link;
    link.type = LinkType::kPcie;
    link.pcieGen = pcieGenFromGts(numberAttr(pci, "link_speed", 0));  // "16.0 GT/s PCIe"
    link.pcieWidth = static_cast<int>(intAttr(pci, "link_width", 0));

    if (pugi::xml_node gpu = pci.child("gpu")) {
      addGpu(gpu, busId, parent, link);
      return;
    }
    if (pugi::xml_node nic = pci.child("nic")) {
      addNics(nic, parent, link, cls);
      return;
    }
    int below = parent;
    if ((cls >> 8) == 0x0604) {
      Node sw;
      sw.type = NodeType::kPciSwitch;
      sw.id = format("sw%d", host_.count(NodeType::kPciSwitch));
      sw.parent = parent;
      sw.busId = busId;
      below = host_.addNode(sw);
      linkToParent(below, link);
    }
    for (pugi::xml_node child : pci.children("pci")) addPci(child, below);
  }

  void addGpu(pugi::xml_node gpu, const std::string& busId, int parent, Link link) {
    Node n;
    n.type = NodeType::kGpu;
    n.id = format("gpu%d", host_.count(NodeType::kGpu));
    n.parent = parent;
    n.busId = busId;
    n.osIndex = static_cast<int>(intAttr(gpu, "dev", host_.count(NodeType::kGpu)));
    n.sm = static_cast<int>(intAttr(gpu, "sm", 0));
    const int node = host_.addNode(n);
    linkToParent(node, link);
    gpuByBusId_[busId] = node;
    const long rank = intAttr(gpu, "rank", -1);
    if (rank >= 0) {
      if (ranks_.count(rank)) fail(format("two GPUs with rank=\"%ld\"", rank));
      ranks_[rank] = node;
    }
    for (pugi::xml_node nv : gpu.children("nvlink")) {
      const long count = intAttr(nv, "count", 1);
      if (count < 1) fail(format("<nvlink> at byte %td: count must be >= 1", nv.offset_debug()));
      nvlinks_.push_back(
          {node, normalizeBusId(nv.attribute("target").value()), static_cast<int>(count), intAttr(nv, "tclass", 0)});
    }
  }

  void addNics(pugi::xml_node nic, int parent, Link link, long pciClass) {
    for (pugi::xml_node net : nic.children("net")) {
      Node n;
      n.type = NodeType::kNic;
      n.id = format("nic%d", host_.count(NodeType::kNic));
      n.parent = parent;
      n.busId = pciClass >= 0 ? normalizeBusId(nic.parent().attribute("busid").value()) : "";
      n.name = net.attribute("name").value();
      if (n.name.empty()) fail(format("<net> at byte %td has no name", net.offset_debug()));
      n.osIndex = static_cast<int>(intAttr(net, "dev", -1));
      const double mbps = numberAttr(net, "speed", -1);
      n.speedGbps = mbps > 0 ? mbps / 1000.0 : -1;
      n.port = static_cast<int>(intAttr(net, "port", 1));
      n.guid = net.attribute("guid").value();
      n.gdr = intAttr(net, "gdr", 0) != 0;
      n.netKind = kindOf(n.name, pciClass);
      linkToParent(host_.addNode(n), link);
    }
  }

  // NCCL does not record the link layer: infer it from the PCI class and whether the name is an RDMA device's.
  static NetKind kindOf(const std::string& name, long pciClass) {
    static constexpr const char* kRdmaPrefixes[] = {"mlx", "bnxt_re", "irdma", "qedr", "hfi", "efa", "erdma", "rxe"};
    bool rdma = false;
    for (const char* p : kRdmaPrefixes) rdma |= name.rfind(p, 0) == 0;
    if ((pciClass >> 8) == 0x0207) return NetKind::kInfiniband;
    if (!rdma) return NetKind::kEthernet;
    return (pciClass >> 8) == 0x0200 ? NetKind::kRoce : NetKind::kInfiniband;
  }

  void linkToParent(int node, Link link) {
    link.a = host_.nodes[node].parent;
    link.b = node;
    link.type = LinkType::kPcie;
    host_.addLink(link);
  }

  void addNvlinks() {
    std::map<int, int> toSwitch;                  // gpu -> links to NVSwitches
    std::map<std::pair<int, int>, int> gpuPairs;  // (lower, higher) gpu -> links (the larger side's count)
    for (const NvlinkEntry& e : nvlinks_) {
      auto peer = gpuByBusId_.find(e.target);
      if (e.targetClass == kNvswitchClass) {
        toSwitch[e.gpu] += e.count;
      } else if (peer != gpuByBusId_.end()) {
        if (peer->second == e.gpu) fail("a GPU has an <nvlink> to itself");
        auto key = std::minmax(e.gpu, peer->second);
        gpuPairs[{key.first, key.second}] = std::max(gpuPairs[{key.first, key.second}], e.count);
      } else if (e.targetClass == kCpuClass) {
        Link l;
        l.a = host_.packageOf(e.gpu);
        l.b = e.gpu;
        l.type = LinkType::kNvlink;
        l.nvlinkCount = e.count;
        host_.addLink(l);
      } else {
        fail(format("<nvlink target=\"%s\">: no GPU with that busid", e.target.c_str()));
      }
    }
    for (auto [pair, count] : gpuPairs) {
      Link l;
      l.a = pair.first;
      l.b = pair.second;
      l.type = LinkType::kNvlink;
      l.nvlinkCount = count;
      host_.addLink(l);
    }
    if (toSwitch.empty()) return;
    Node fabric;
    fabric.type = NodeType::kNvswitch;
    fabric.id = "nvs0";
    fabric.parent = 0;
    fabric.name = "NVSwitch";
    const int nvs = host_.addNode(fabric);
    for (auto [gpu, count] : toSwitch) {
      Link l;
      l.a = gpu;
      l.b = nvs;
      l.type = LinkType::kNvlink;
      l.nvlinkCount = count;
      host_.addLink(l);
    }
  }

  std::vector<RankPlacement> rankPlacements() const {
    std::vector<RankPlacement> out;
    for (auto [rank, gpu] : ranks_) {
      if (rank != static_cast<long>(out.size()))
        fail(format("GPU ranks are not 0..%zu (rank %ld missing)", ranks_.size() - 1, static_cast<long>(out.size())));
      out.push_back({0, gpu, -1});
    }
    return out;
  }

  struct NvlinkEntry {
    int gpu;
    std::string target;
    int count;
    long targetClass;
  };

  const std::string& source_;
  HostTopology host_;
  std::map<std::string, int> gpuByBusId_;
  std::map<long, int> ranks_;  // rank -> GPU node
  std::vector<NvlinkEntry> nvlinks_;
};

}  // namespace

JobTopology parseNcclXml(std::string_view text, const std::string& source) { return NcclXmlReader(source).read(text); }

}  // namespace tern::topo
