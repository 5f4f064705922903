// Compressed collectives, written as schedules like every other algorithm (encode/decode are steps; the executor
// holds the codec and error-feedback states), so they run over any transport.
//
//  - Two-phase allreduce for dense codecs (sign, QSGD, fp16, bf16), as DeepSpeed's 1-bit Adam: each rank encodes
//    chunk c of its tensor with its worker error feedback and sends it to rank c (an all-to-all of payloads); rank c
//    decodes and sums the n payloads of its chunk in rank order (deterministic), divides for avg, re-encodes the sum
//    with its server error feedback, and every rank gathers every chunk's payload and decodes it. Every rank
//    decodes the same bytes, so results are bit-identical everywhere. Wire volume per rank: 2 (n-1)/n payloads
//    of the tensor, i.e. the ring's factor times the codec's ratio.
//  - Sparse allgather for Top-K: each rank encodes its whole tensor (k index/value pairs, worker error feedback),
//    the payloads are all-gathered and every rank sums them in rank order. Volume n k pairs per rank; the planner
//    falls back to a dense path when n k pairs outweigh the dense tensor.
//  - Hierarchical allreduce (compressed_hier), for fp32 tensors on >= 2 nodes of the same number (>= 2) of ranks
//    (BuildOptions::hostOf): compresses only what crosses the network. Each piece is reduce-scattered inside the
//    node uncompressed (local rank l sums slice l of every local input, in local-rank order), the node sums of
//    slice l go through the two-phase exchange above among local rank l of every node, and the decoded slices are
//    all-gathered inside the node uncompressed. Inter-node payload per rank: 2 (N-1)/N of its 1/g slice (N nodes
//    of g ranks) instead of 2 (n-1)/n of the tensor, and links inside a node carry plain fp32.
//  - Allgather: each rank's block encoded once and gathered; reduce-scatter: phase one of the two-phase allreduce.
#pragma once

#include <vector>

#include "exec/collective.hpp"
#include "exec/schedule.hpp"

namespace tern {

Schedule buildCompressedTwoPhaseAllReduce(const CollArgs&, int rank, int nranks, const BuildOptions&);

// The two-phase allreduce's layout, shared with its device form (core/device_compressed_calls.hpp) so that both cut
// a tensor alike (chunk boundaries set the codecs' scales): the elements per piece of a tensor of `count`, and the
// first element of chunk c of n in a piece of `count` elements.
size_t twoPhasePieceElems(size_t count, int n, const BuildOptions& options);
size_t chunkOffset(size_t count, int n, int c);
Schedule buildSparseAllGatherAllReduce(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildCompressedHierAllReduce(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildCompressedAllGather(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildCompressedReduceScatter(const CollArgs&, int rank, int nranks, const BuildOptions&);

// Whether hostOf (BuildOptions::hostOf) describes >= 2 nodes with the same number, >= 2, of ranks each.
bool evenMultiNode(const std::vector<int>& hostOf, int nranks);
// Whether buildCompressed runs this call as compressed_hier: an fp32 allreduce with a dense codec on such nodes.
bool compressedHierApplies(const CollArgs& args, const compress::Codec& codec, const std::vector<int>& hostOf,
                           int nranks);
// The compressed algorithm that runs a collective with this codec ("" if none applies); `hierarchical` when the
// ranks form even multi-rank nodes and the tensor is fp32 (see compressedHierApplies).
const char* compressedAlgorithmFor(Collective c, const compress::Codec& codec, bool hierarchical = false);
Schedule buildCompressed(const CollArgs& args, int rank, int nranks, const BuildOptions& options);

}  // namespace tern
