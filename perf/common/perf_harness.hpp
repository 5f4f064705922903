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
  // Elements into the receive buffer where the in-place call's output starts: a reduce-scatter writes its block
  // inside its input (nccl-tests: recvbuff = sendbuff + rank * recvcount); every other collective's output is the
  // whole receive buffer.
  size_t inPlaceRecvOffset = 0;
};

// What element j of a rank's receive buffer must hold after the collective (the -c 1 check). Every rank's send
// element k holds the harness's input value for (rank, k); the harness computes the expected bits from these
// with the independent reference (tests/common/reference.hpp).
struct Expected {
  enum Kind {
    kReduced,    // the op over every rank's send element `index`, in rank order, rounded once to the datatype
    kCopied,     // send element `index` of rank `source`, bit for bit
    kUnchanged,  // what the harness put there before the call: a sentinel, or (in place) this rank's own input
  };
  Kind kind = kUnchanged;
  int source = 0;
  size_t index = 0;

  static Expected reduced(size_t index) { return {kReduced, 0, index}; }
  static Expected copied(int source, size_t index) { return {kCopied, source, index}; }
  static Expected unchanged() { return {}; }
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
  // What output element j must hold on `rank`, as the API documents the collective: receive element j, or in place
  // receive element Layout::inPlaceRecvOffset + j.
  Expected (*expected)(size_t j, int rank, int nranks, size_t callCount, int root);
};

int runPerf(const CollectiveSpec& spec, int argc, char** argv);

}  // namespace tern::perf
