// reduce_perf: nccl-tests compatible benchmark of ternReduce.
#include "perf_harness.hpp"

using namespace tern::perf;

int main(int argc, char** argv) {
  CollectiveSpec spec{"reduce", "reduce_perf", true, true, [](int) { return 1.0; },
                      [](size_t count, int, int) {
                        return Layout{count, count, count, 0};
                      },
                      [](size_t count, int) { return count; },
                      [](const void* s, void* r, size_t c, ternDataType_t t, ternRedOp_t op, int root,
                         ternComm_t comm) { return ternReduce(s, r, c, t, op, root, comm); },
                      // recvbuff is ignored off the root (tern.h): it must not be written there.
                      [](size_t j, int rank, int, size_t, int root) {
                        return rank == root ? Expected::reduced(j) : Expected::unchanged();
                      }};
  return runPerf(spec, argc, argv);
}
