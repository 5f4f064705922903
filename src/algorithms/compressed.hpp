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
//  - Allgather: each rank's block encoded once and gathered; reduce-scatter: phase one of the two-phase allreduce.
#pragma once

#include "algorithms/collective.hpp"
#include "algorithms/schedule.hpp"

namespace tern {

Schedule buildCompressedTwoPhaseAllReduce(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildSparseAllGatherAllReduce(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildCompressedAllGather(const CollArgs&, int rank, int nranks, const BuildOptions&);
Schedule buildCompressedReduceScatter(const CollArgs&, int rank, int nranks, const BuildOptions&);

// The compressed algorithm that runs a collective with this codec ("" if none applies).
const char* compressedAlgorithmFor(Collective c, const compress::Codec& codec);
Schedule buildCompressed(const CollArgs& args, int rank, int nranks, const BuildOptions& options);

}  // namespace tern
