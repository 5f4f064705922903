// The host id of the topology records: the library's one host id function (base/host_id.hpp), by its topo:: name.
#pragma once

#include "base/host_id.hpp"

namespace tern::topo {

inline constexpr const char* kHostIdEnv = "TERN_HOSTID";

using tern::hostId;
using tern::hostName;

}  // namespace tern::topo
