// Number and link formatting shared by the text and dot renderers.
#include <cmath>
#include <cstdio>

#include "base/error.hpp"
#include "topo/render.hpp"

namespace tern::topo {

std::string formatNumber(double v) {
  if (std::isinf(v)) return "inf";
  // Four significant digits keep 3.125 (25 GbE in GB/s) and 0.6 exact without printing 450.000.
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

std::string describeLink(const Link& l) {
  std::string bw = formatNumber(l.bandwidth) + " GB/s";
  switch (l.type) {
    case LinkType::kPcie:
      if (l.pcieGen > 0 && l.pcieWidth > 0) return format("PCIe Gen%d x%d, %s", l.pcieGen, l.pcieWidth, bw.c_str());
      return "PCIe, " + bw;
    case LinkType::kNvlink:
      return format("NVLink%d x%d, %s", l.nvlinkVersion, l.nvlinkCount, bw.c_str());
    case LinkType::kSmp:
      return "SMP, " + bw;
    case LinkType::kMemory:
      return "memory, " + bw;
    case LinkType::kNet:
      return "network, " + bw;
  }
  return bw;
}

}  // namespace tern::topo
