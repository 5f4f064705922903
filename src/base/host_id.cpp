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

namespace {

// The running kernel's random boot id; empty where there is none.
std::string bootId() {
  std::string id;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::getline(in, id);
  return id;
}

}  // namespace

std::string machineId() {
  const std::string id = bootId();
  return id.empty() ? hostName() : id;
}

std::string hostId() {
  if (const std::optional<std::string> env = envString("HOSTID")) return *env;
  const std::string id = bootId();
  return id.empty() ? hostName() : hostName() + ":" + id;
}

}  // namespace tern
