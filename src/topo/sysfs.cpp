#include "topo/sysfs.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

namespace tern::topo::sysfs {

std::string readLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

std::vector<std::string> listDir(const std::string& path) {
  std::vector<std::string> out;
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

double netdevSpeedGbps(const std::string& ifname) {
  std::string s = readLine("/sys/class/net/" + ifname + "/speed");
  if (s.empty()) return -1;
  long mbps = std::strtol(s.c_str(), nullptr, 10);
  return mbps > 0 ? static_cast<double>(mbps) / 1000.0 : -1;
}

RdmaPort rdmaPort(const std::string& device, int port) {
  RdmaPort out;
  const std::string dir = "/sys/class/infiniband/" + device + "/ports/" + std::to_string(port);
  std::string layer = readLine(dir + "/link_layer");
  if (layer == "InfiniBand") out.kind = NetKind::kInfiniband;
  if (layer == "Ethernet") out.kind = NetKind::kRoce;
  std::string rate = readLine(dir + "/rate");  // "200 Gb/sec (4X HDR)"
  if (!rate.empty()) {
    double gbps = std::strtod(rate.c_str(), nullptr);
    if (gbps > 0) out.speedGbps = gbps;
  }
  out.netdev = readLine(dir + "/gid_attrs/ndevs/0");  // RoCE ports name their Ethernet interface here
  if (out.netdev.empty()) {
    std::vector<std::string> nets = listDir("/sys/class/infiniband/" + device + "/device/net");
    if (!nets.empty()) out.netdev = nets[0];
  }
  return out;
}

bool pcieLink(const std::string& busId, int* gen, int* width) {
  const std::string dir = "/sys/bus/pci/devices/" + busId;
  std::string speed = readLine(dir + "/current_link_speed");  // "16.0 GT/s PCIe" (older kernels: "16 GT/s")
  std::string lanes = readLine(dir + "/current_link_width");
  if (speed.empty() || lanes.empty()) return false;
  *gen = pcieGenFromGts(std::strtod(speed.c_str(), nullptr));
  *width = static_cast<int>(std::strtol(lanes.c_str(), nullptr, 10));
  return *gen > 0 && *width > 0;
}

bool gpuDirectRdma() {
  struct stat st;
  return stat("/sys/module/nvidia_peermem", &st) == 0 || stat("/sys/module/nv_peer_mem", &st) == 0;
}

}  // namespace tern::topo::sysfs
