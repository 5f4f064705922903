// Topology files of any supported format, and the TERN_TOPO_FILE / TERN_TOPO_DUMP_FILE knobs.
//
// Formats are told apart by content, not name: a JSON object is tern's own format (topo/topo_json.hpp), an XML
// document whose root is <system> is NCCL's (topo/nccl_xml.hpp), one whose root is <topology> is hwloc's
// (parsed by hwloc itself, topo/detect.hpp).
#pragma once

#include <string>
#include <string_view>

#include "topo/topology.hpp"

namespace tern::topo {

inline constexpr const char* kTopoFileEnv = "TERN_TOPO_FILE";           // load this instead of detecting
inline constexpr const char* kTopoDumpFileEnv = "TERN_TOPO_DUMP_FILE";  // write what was detected here

enum class TopoFormat { kJson, kNcclXml, kHwlocXml };

// The format of a file's content; Error(ternInvalidArgument, "<source>: ...") when it is none of them.
TopoFormat sniffTopoFormat(std::string_view text, const std::string& source);

// Loads a whole job from a file of any format. Errors (unreadable file, bad syntax, bad content) are
// Error(ternInvalidArgument) with a message that starts with the path and says what is wrong.
JobTopology loadTopologyFile(const std::string& path);

// Writes a job as JSON (topo_json.hpp). Error(ternSystemError) when the file cannot be written.
void writeTopologyFile(const JobTopology& job, const std::string& path);

// A one-host job around a host: default ranks (one per GPU, or one), the network its NICs imply.
JobTopology singleHostJob(HostTopology host);

// This host's entry of a topology file: of a multi-host file, the host whose id is hostId() or whose hostname is
// this machine's, else the first host, which then takes this machine's host id (so that a file describing one node
// of a cluster can be shared by every node). network, when given, receives the file's network (declared, or what
// its NICs imply). Errors as loadTopologyFile's.
HostTopology hostFromTopologyFile(const std::string& path, Network* network = nullptr);

// This host's topology as the tools see it: hostFromTopologyFile(TERN_TOPO_FILE) when that is set, otherwise
// detectHost(). When TERN_TOPO_DUMP_FILE is set the result is written there as a one-host JSON job; "%h" in the
// name becomes the hostname and "%p" the process id. (A communicator reads the same knobs through
// topo/local_topology.hpp: detection once per process, and rank 0 dumps the whole job instead.)
HostTopology localHostTopology();

// "%h" -> hostname, "%p" -> pid, "%%" -> "%" (as TERN_DEBUG_FILE does).
std::string expandFileName(const std::string& pattern);

}  // namespace tern::topo
