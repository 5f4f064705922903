// Every rank pair's link as the cost model sees it: class, alpha, beta and the shared ports a transfer between them
// occupies, computed once from the job topology, the intra-host transport and the cost parameters.
//
// Ports (what contention is modelled on). A transfer holds, for bytes x beta seconds:
//  - the sender's send port and the receiver's receive port: within a host one pair per rank (a CPU rank copies
//    one message at a time; a GPU's copy engines do too), across hosts another pair per rank (the rank's path to its
//    NIC), so a rank can stream to a host neighbour and to the network at once, and send while it receives;
//  - across hosts also the sending NIC's egress and the receiving NIC's ingress, held for bytes x the NIC's own
//    beta. Ranks of one host that share a NIC queue on it: two concurrent cross-host streams from one host each get
//    half the NIC. (Queueing whole messages in arrival order rather than interleaving them byte by byte gives the
//    same total time for the pipelined chunk streams collectives are made of, and keeps every finish time a sum of
//    alpha and beta terms, which the calibration fit relies on.)
// Latency (alpha) holds no port: messages in flight overlap their latencies, as they do on real links.
#pragma once

#include <string>
#include <vector>

#include "planner/cost_params.hpp"
#include "planner/model_link.hpp"
#include "topo/topology.hpp"

namespace tern::planner {

struct PairLink {
  ModelLink cls = ModelLink::kShm;
  double alpha = 0;        // seconds
  double beta = 0;         // seconds per byte, this pair's bottleneck (out of cache)
  CacheLevels cache = {};  // same-host calibrated classes: faster while the call fits in cache
  double betaScale = 1;    // beta / the class's calibrated beta (1 when uncalibrated): the coefficient a fit uses
  int sendPort = -1;       // resources held for bytes x beta
  int recvPort = -1;
  int nicOut = -1;  // cross-host only: resources held for bytes x nicBeta
  int nicIn = -1;
  double nicBeta = 0;
  double lineGBs = 0;  // cross-host: the NIC line rate the pair's traffic is limited to (GB/s), for reports
};

class LinkTable {
 public:
  // The job must have at least one rank. Throws Error(ternInvalidArgument) for a rank without a host.
  LinkTable(const topo::JobTopology& job, IntraTransport intra, const CostParams& params);

  int nranks() const { return n_; }
  const PairLink& pair(int a, int b) const { return pairs_[static_cast<size_t>(a) * n_ + b]; }
  const ComputeCost& compute(int rank) const { return gpu_[rank] ? params_.gpu : params_.cpu; }
  // Codec kernels run on the rank's device: GPU ranks scale the CPU codec figures by the copy-speed ratio.
  double codecScale(int rank) const { return gpu_[rank] ? params_.gpu.copyBeta / params_.cpu.copyBeta : 1.0; }
  bool isGpu(int rank) const { return gpu_[rank]; }
  int hostOf(int rank) const { return host_[rank]; }

  int numPorts() const { return static_cast<int>(portNames_.size()); }
  const std::string& portName(int port) const { return portNames_[port]; }
  // Ranks that send through this port (several for a shared NIC).
  int portUsers(int port) const { return portUsers_[port]; }

  // The effective cost of a class (the calibrated figure, else the mean over the pairs of that class, else the
  // default); used for closed-form explanations.
  LinkCost classCost(ModelLink c) const;
  bool hasClass(ModelLink c) const;
  const CostParams& params() const { return params_; }

 private:
  int n_;
  CostParams params_;
  std::vector<PairLink> pairs_;
  std::vector<bool> gpu_;
  std::vector<int> host_;
  std::vector<std::string> portNames_;
  std::vector<int> portUsers_;
};

}  // namespace tern::planner
