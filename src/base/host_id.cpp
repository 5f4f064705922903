#include "base/host_id.hpp"

#include <unistd.h>

#include <fstream>
#include <optional>

#include "base/env.hpp"

namespace tern {

std::string hostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

std::string hostId() {
  if (const std::optional<std::string> env = envString("HOSTID")) return *env;
  std::string bootId;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::getline(in, bootId);
  return bootId.empty() ? hostName() : hostName() + ":" + bootId;
}

}  // namespace tern
