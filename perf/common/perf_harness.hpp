// The engine shared by every perf binary: size sweep, warmup, timing, correctness check, the nccl-tests table and
// the JSON records. Each binary only describes its collective (a CollectiveSpec) and calls runPerf.
#pragma once

#include <cstddef>

#include "perf_options.hpp"
#include "tern/tern.h"

namespace tern::perf {

struct Layout {
  size_t sendElems;          // elements in the send buffer
  size_t recvElems;          // elements in the receive buffer
  size_t callCount;          // the count argument passed to the collective
  size_t inPlaceSendOffset;  // elements into the receive buffer where the in-place send data lives
};

struct CollectiveSpec {
  const char* name;    // as ternQueryAlgorithm knows it ("allreduce"), and in JSON
  const char* binary;  // "all_reduce_perf"
  bool hasOp;
  bool hasRoot;
  double (*busFactor)(int nranks);
  // Buffer layout for `count` elements of nccl-tests "size" (already rounded by roundCount).
  Layout (*layout)(size_t count, int nranks, int rank);
  // nccl-tests rounds the element count so the collective divides evenly.
  size_t (*roundCount)(size_t count, int nranks);
  ternResult_t (*run)(const void* send, void* recv, size_t callCount, ternDataType_t dt, ternRedOp_t op, int root,
                      ternComm_t comm);
  // Value this rank puts at send[j], and the value expected at recv[j].
  double (*sendValue)(size_t j, int rank, int nranks, size_t callCount, ternRedOp_t op, int root);
  // Returns false when recv[j] is not checked on this rank (e.g. reduce on non-root).
  bool (*expectedValue)(size_t j, int rank, int nranks, size_t callCount, ternRedOp_t op, int root, double* out);
};

int runPerf(const CollectiveSpec& spec, int argc, char** argv);

// Data pattern helpers shared by the specs: small integers so every datatype (half, bf16, int8) holds every
// partial result exactly; prod uses 1s and 2s.
double patternValue(int rank, size_t index, ternRedOp_t op);
double reduceOverRanks(int nranks, size_t index, ternRedOp_t op);

}  // namespace tern::perf
