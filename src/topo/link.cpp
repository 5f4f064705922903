#include "topo/link.hpp"

#include <cmath>

namespace tern::topo {

LinkClassDefaults linkClassDefaults(LinkClass c) {
  switch (c) {
    case LinkClass::kShm:
      return {0.5, 10.0};
    case LinkClass::kNvlink:
      return {0.6, 300.0};
    case LinkClass::kPcie:
      return {1.0, 24.0};
    case LinkClass::kSmp:
      return {1.0, 20.0};
    case LinkClass::kNetwork:
      return {2.7, 12.5};
  }
  return {1.0, 1.0};
}

const char* linkTypeName(LinkType t) {
  switch (t) {
    case LinkType::kMemory:
      return "memory";
    case LinkType::kPcie:
      return "pcie";
    case LinkType::kNvlink:
      return "nvlink";
    case LinkType::kSmp:
      return "smp";
    case LinkType::kNet:
      return "net";
  }
  return "?";
}

const char* netKindName(NetKind k) {
  switch (k) {
    case NetKind::kUnknown:
      return "unknown";
    case NetKind::kInfiniband:
      return "ib";
    case NetKind::kRoce:
      return "roce";
    case NetKind::kEthernet:
      return "ethernet";
  }
  return "?";
}

const char* linkClassName(LinkClass c) {
  switch (c) {
    case LinkClass::kShm:
      return "shm";
    case LinkClass::kNvlink:
      return "nvlink";
    case LinkClass::kPcie:
      return "pcie";
    case LinkClass::kSmp:
      return "smp";
    case LinkClass::kNetwork:
      return "network";
  }
  return "?";
}

std::optional<LinkType> parseLinkType(std::string_view s) {
  for (LinkType t : {LinkType::kMemory, LinkType::kPcie, LinkType::kNvlink, LinkType::kSmp, LinkType::kNet}) {
    if (s == linkTypeName(t)) return t;
  }
  return std::nullopt;
}

std::optional<NetKind> parseNetKind(std::string_view s) {
  if (s == "infiniband") return NetKind::kInfiniband;
  if (s == "eth") return NetKind::kEthernet;
  for (NetKind k : {NetKind::kUnknown, NetKind::kInfiniband, NetKind::kRoce, NetKind::kEthernet}) {
    if (s == netKindName(k)) return k;
  }
  return std::nullopt;
}

double pcieBandwidth(int gen, int width) {
  // Practical x16 figures (REFERENCE.md: Gen3 ~12, Gen4 ~24, Gen5 ~48 GB/s); each generation doubles the last.
  static constexpr double kPerX16[] = {0, 3, 6, 12, 24, 48, 96};
  if (gen <= 0 || width <= 0) return 0;
  if (gen > 6) gen = 6;
  return kPerX16[gen] * width / 16.0;
}

double pcieBandwidthFromRaw(double rawGBs) {
  // 24 GB/s practical out of 31.5 GB/s raw for Gen4 x16: TLP headers and flow control take the rest.
  constexpr double kPracticalShare = 24.0 / 31.5077;
  return rawGBs > 0 ? rawGBs * kPracticalShare : 0;
}

int pcieGenFromGts(double gts) {
  static constexpr double kRates[] = {2.5, 5, 8, 16, 32, 64};
  for (int i = 0; i < 6; ++i) {
    if (std::fabs(gts - kRates[i]) < 0.3) return i + 1;
  }
  return 0;
}

double nvlinkBandwidth(int version, int count) {
  static constexpr double kPerLink[] = {0, 20, 25, 25, 25, 50};
  if (version <= 0) version = 3;
  if (version > 5) version = 5;
  return kPerLink[version] * (count > 0 ? count : 1);
}

int nvlinkVersionForSm(int sm) {
  if (sm >= 100) return 5;
  if (sm >= 90) return 4;
  if (sm >= 80) return 3;
  if (sm >= 70) return 2;
  if (sm >= 60) return 1;
  return 0;
}

double defaultLinkLatencyUs(LinkType t) {
  switch (t) {
    case LinkType::kMemory:
      return 0.1;
    case LinkType::kPcie:
      return 0.5;
    case LinkType::kNvlink:
      return 0.3;
    case LinkType::kSmp:
      return 0.5;
    case LinkType::kNet:
      return 2.7;
  }
  return 1.0;
}

double defaultLinkBandwidth(LinkType t) {
  switch (t) {
    case LinkType::kMemory:
      return 100.0;
    case LinkType::kPcie:
      return 24.0;
    case LinkType::kNvlink:
      return 25.0;
    case LinkType::kSmp:
      return 20.0;
    case LinkType::kNet:
      return 12.5;
  }
  return 1.0;
}

double defaultNetLatencyUs(NetKind k) {
  switch (k) {
    case NetKind::kInfiniband:
      return 1.0;
    case NetKind::kRoce:
      return 2.0;
    case NetKind::kEthernet:
      return 15.0;
    case NetKind::kUnknown:
      return 2.7;
  }
  return 2.7;
}

}  // namespace tern::topo
