// reduce_perf: nccl-tests compatible benchmark of ternReduce.
#include "perf_harness.hpp"

using namespace tern::perf;

int main(int argc, char** argv) {
  CollectiveSpec spec{"reduce",
                      "reduce_perf",
                      true,
                      true,
                      [](int) { return 1.0; },
                      [](size_t count, int, int) {
                        return Layout{count, count, count, 0};
                      },
                      [](size_t count, int) { return count; },
                      [](const void* s, void* r, size_t c, ternDataType_t t, ternRedOp_t op, int root,
                         ternComm_t comm) { return ternReduce(s, r, c, t, op, root, comm); },
                      [](size_t j, int rank, int, size_t, ternRedOp_t op, int) { return patternValue(rank, j, op); },
                      [](size_t j, int rank, int n, size_t, ternRedOp_t op, int root, double* out) {
                        if (rank != root) return false;
                        *out = reduceOverRanks(n, j, op);
                        return true;
                      }};
  return runPerf(spec, argc, argv);
}
