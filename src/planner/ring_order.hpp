// Rank orders for rings and chains (BuildOptions::ringOrder) and the host map (BuildOptions::hostOf), from the
// topology.
//
// A ring over H hosts must cross between hosts at least H times; it crosses exactly H times when the ranks of each
// host are adjacent, and then each host's NIC carries one stream each way instead of one per local rank. (On
// cpu-2node-1g, a node-alternating ring 0,2,1,3 puts two streams on every NIC and runs at half the speed; the
// planner tests check that the model sees it.) Inside a host the order follows the links: starting from the host's
// lowest rank, the next rank is the nearest one not yet visited (best path type, then bandwidth, then latency, then
// rank), so GPUs behind one PCIe switch, or CPU ranks of one socket, are neighbours.
#pragma once

#include <vector>

#include "topo/topology.hpp"

namespace tern::planner {

// Host index of every rank, hosts numbered in order of their lowest rank (what the hierarchical builders expect).
std::vector<int> hostOfRanks(const topo::JobTopology& job);

// The ring order of a job: hosts in order of their lowest rank, each host's ranks together, nearest-neighbour order
// inside. A permutation of 0..nranks-1.
std::vector<int> topologyRingOrder(const topo::JobTopology& job);

// The same from the host map alone (no topology): hosts in order of their lowest rank, ranks of a host in rank
// order. An empty map means one host: the identity.
std::vector<int> ringOrderFromHostOf(const std::vector<int>& hostOf, int nranks);

}  // namespace tern::planner
