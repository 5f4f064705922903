// The host id groups ranks into hosts: ranks with equal ids share memory and a PCIe/NVLink graph. It is the hostname
// plus the kernel boot id, so that containers or network namespaces that share a hostname but not a kernel count as
// different hosts, and a rebooted machine never matches stale state. TERN_HOSTID overrides it (to make the network
// namespaces of one machine act as separate nodes, or to group ranks by hand).
#pragma once

#include <string>

namespace tern::topo {

inline constexpr const char* kHostIdEnv = "TERN_HOSTID";

// TERN_HOSTID when set and non-empty, else "<hostname>:<boot id>" (just the hostname where there is no boot id).
std::string hostId();

// gethostname(), "localhost" when it fails.
std::string hostName();

}  // namespace tern::topo
