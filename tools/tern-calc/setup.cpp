#include "setup.hpp"

#include <optional>
#include <string>

#include "base/env.hpp"
#include "base/error.hpp"
#include "planner/calibration.hpp"
#include "planner/training.hpp"
#include "planner/units.hpp"
#include "topo/topo_file.hpp"

namespace tern::calc {

using namespace tern::planner;

planner::CostParams loadParams(const Options& o, std::string* source) {
  CostParams params = defaultCostParams();
  std::string path = o.tune;
  if (path.empty()) {
    if (std::optional<std::string> env = envString("TUNE_FILE")) path = *env;
  }
  *source = "defaults";
  if (!path.empty()) {
    applyCalibrationFile(path, params);
    *source = path;
  }
  return params;
}

bool hasTopology(const Options& o) { return !o.preset.empty() || !o.topoFile.empty() || o.nodes > 0; }

PlannerConfig Setup::config(int hosts) const {
  PlannerConfig c;
  c.job = hosts > 0 && hosts < static_cast<int>(job->hosts.size())
              ? std::make_shared<const topo::JobTopology>(firstHosts(*job, hosts))
              : job;
  c.intra = intra;
  c.params = params;
  c.pipelineChunkBytes = chunkBytes;
  // The shared-memory direct collectives compete on one host of CPU ranks over shm.
  c.directCandidate = intra != IntraTransport::kLoopback && c.job->hosts.size() == 1 && !topo::placesGpus(*c.job);
  return c;
}

Setup resolveSetup(const Options& o) {
  Setup s;
  s.params = loadParams(o, &s.paramsSource);
  if (!o.chunk.empty()) s.chunkBytes = static_cast<size_t>(parseBytes(o.chunk));
  if (!o.preset.empty() && !o.topoFile.empty()) {
    throwError(ternInvalidArgument, "give either --preset or --topo, not both");
  }
  if (!o.topoFile.empty()) {
    topo::JobTopology job = topo::loadTopologyFile(o.topoFile);
    if (!o.intra.empty() || !o.inter.empty() || o.ranksPerNode > 0 || o.nicsPerNode > 0) {
      if (o.intra != "loopback" && o.intra != "tcp") {
        throwError(ternInvalidArgument, "--topo takes only --intra loopback and --nodes among the topology flags");
      }
    }
    if (o.intra == "loopback" || o.intra == "tcp") s.intra = IntraTransport::kLoopback;
    if (o.nodes > 0) {
      if (o.nodes > static_cast<int>(job.hosts.size())) {
        throwError(ternInvalidArgument, "--nodes %d: %s has only %zu hosts", o.nodes, o.topoFile.c_str(),
                   job.hosts.size());
      }
      job = firstHosts(job, o.nodes);
    }
    s.title = o.topoFile;
    s.description = job.description.empty() ? job.name : job.description;
    s.job = std::make_shared<const topo::JobTopology>(std::move(job));
    return s;
  }
  ClusterSpec spec;
  if (!o.preset.empty()) {
    spec = presetSpec(o.preset);
    s.title = o.preset;
    for (const Preset& p : presets()) {
      if (o.preset == p.name) s.description = p.description;
    }
  } else {
    if (o.nodes <= 0) throwError(ternInvalidArgument, "no topology: give --preset, --topo or --nodes (see --list)");
    spec.nodes = o.nodes;
    spec.ranksPerNode = 1;
    spec.netKind = topo::NetKind::kEthernet;
    spec.netGbps = 10;
    s.title = "custom";
  }
  if (o.nodes > 0) spec.nodes = o.nodes;
  if (o.ranksPerNode > 0) spec.ranksPerNode = o.ranksPerNode;
  if (!o.intra.empty()) parseIntra(o.intra, spec);
  if (!o.inter.empty()) parseInter(o.inter, spec);
  if (o.nicsPerNode > 0) spec.nicsPerNode = o.nicsPerNode;
  s.spec = spec;
  s.intra = intraTransportOf(spec);
  if (s.description.empty() || o.nodes > 0 || o.ranksPerNode > 0 || !o.intra.empty() || !o.inter.empty()) {
    s.description = describe(spec);
  }
  s.job = std::make_shared<const topo::JobTopology>(buildCluster(spec, s.title == "custom" ? "node" : s.title));
  return s;
}

}  // namespace tern::calc
