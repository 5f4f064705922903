#include "topo/topo_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <pugixml.hpp>
#include <sstream>

#include "base/env.hpp"
#include "base/error.hpp"
#include "topo/detect.hpp"
#include "topo/host_id.hpp"
#include "topo/nccl_xml.hpp"
#include "topo/topo_json.hpp"

namespace tern::topo {

TopoFormat sniffTopoFormat(std::string_view text, const std::string& source) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 byte order mark
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) throwError(ternInvalidArgument, "%s: empty file", source.c_str());
  if (text[first] == '{') return TopoFormat::kJson;
  if (text[first] != '<') {
    throwError(ternInvalidArgument, "%s: not a topology file (expected a JSON object, NCCL XML or hwloc XML)",
               source.c_str());
  }
  pugi::xml_document doc;
  pugi::xml_parse_result parsed = doc.load_buffer(text.data(), text.size());
  if (!parsed) {
    throwError(ternInvalidArgument, "%s: XML parse error at byte %td: %s", source.c_str(), parsed.offset,
               parsed.description());
  }
  std::string_view root = doc.document_element().name();
  if (root == "system") return TopoFormat::kNcclXml;
  if (root == "topology") return TopoFormat::kHwlocXml;
  throwError(ternInvalidArgument, "%s: XML root <%.*s> is neither NCCL's <system> nor hwloc's <topology>",
             source.c_str(), static_cast<int>(root.size()), root.data());
}

JobTopology singleHostJob(HostTopology host) {
  JobTopology job;
  job.name = host.id;
  job.hosts.push_back(std::move(host));
  job.ranks = defaultRanks(job.hosts);
  job.network = deriveNetwork(job.hosts);
  job.network.latencyUs = defaultNetLatencyUs(job.network.kind);
  return job;
}

JobTopology loadTopologyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throwError(ternInvalidArgument, "%s: cannot open: %s", path.c_str(), std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throwError(ternInvalidArgument, "%s: cannot read: %s", path.c_str(), std::strerror(errno));
  const std::string text = buf.str();
  switch (sniffTopoFormat(text, path)) {
    case TopoFormat::kJson:
      return parseJobJson(text, path);
    case TopoFormat::kNcclXml:
      return parseNcclXml(text, path);
    case TopoFormat::kHwlocXml: {
      JobTopology job = singleHostJob(parseHwlocXml(text, path));
      validate(job, path);
      return job;
    }
  }
  throwError(ternInternalError, "%s: unhandled topology format", path.c_str());
}

void writeTopologyFile(const JobTopology& job, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throwError(ternSystemError, "cannot write topology file %s: %s", path.c_str(), std::strerror(errno));
  out << dumpJobJson(job);
  out.close();
  if (!out) throwError(ternSystemError, "cannot write topology file %s: %s", path.c_str(), std::strerror(errno));
}

std::string expandFileName(const std::string& pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    const char c = pattern[++i];
    if (c == 'h') {
      out += hostName();
    } else if (c == 'p') {
      out += std::to_string(getpid());
    } else if (c == '%') {
      out += '%';
    } else {
      out += '%';
      out += c;
    }
  }
  return out;
}

HostTopology hostFromTopologyFile(const std::string& path, Network* network) {
  JobTopology job = loadTopologyFile(path);
  const std::string id = hostId();
  const std::string name = hostName();
  int match = -1;
  for (size_t h = 0; h < job.hosts.size() && match < 0; ++h) {
    if (job.hosts[h].id == id) match = static_cast<int>(h);
  }
  for (size_t h = 0; h < job.hosts.size() && match < 0; ++h) {
    if (!job.hosts[h].hostname.empty() && job.hosts[h].hostname == name) match = static_cast<int>(h);
  }
  HostTopology host;
  if (match >= 0) {
    host = std::move(job.hosts[match]);
  } else {
    host = std::move(job.hosts[0]);
    host.id = id;
    host.hostname = name;
  }
  if (network != nullptr) *network = job.network;
  return host;
}

HostTopology localHostTopology() {
  // Read at each call (tern-topo and tests change them); declared in the knobs table like every TERN_ variable.
  const std::optional<std::string> file = envString("TOPO_FILE");
  HostTopology host = file ? hostFromTopologyFile(*file) : detectHost();
  if (const std::optional<std::string> dump = envString("TOPO_DUMP_FILE")) {
    writeTopologyFile(singleHostJob(host), expandFileName(*dump));
  }
  return host;
}

}  // namespace tern::topo
