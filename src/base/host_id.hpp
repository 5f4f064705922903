// The host id groups ranks into hosts: ranks with equal ids share memory and a PCIe/NVLink graph. It is the hostname
// plus the kernel boot id, so that containers or network namespaces that share a hostname but not a kernel count as
// different hosts, and a rebooted machine never matches stale state. TERN_HOSTID overrides it (to make the network
// namespaces of one machine act as separate nodes, or to group ranks by hand). The bootstrap and topology detection
// both use this one function, so the id a rank joins with is the id its detected host carries.
#pragma once

#include <string>

namespace tern {

// TERN_HOSTID when set and non-empty (read at each call), else "<hostname>:<boot id>" (just the hostname where there
// is no boot id).
std::string hostId();

// The kernel this process runs on: its boot id, the same in every network namespace and container of one running
// machine (which TERN_HOSTID may split into several hosts), so that ranks can tell whose CPUs they share; the hostname
// where there is no boot id.
std::string machineId();

// gethostname(), "localhost" when it fails.
std::string hostName();

}  // namespace tern
