// all_reduce_perf: nccl-tests compatible benchmark of ternAllReduce.
#include "perf_harness.hpp"

using namespace tern::perf;

int main(int argc, char** argv) {
  CollectiveSpec spec{"allreduce",
                      "all_reduce_perf",
                      true,
                      false,
                      [](int n) { return 2.0 * (n - 1) / n; },
                      [](size_t count, int, int) {
                        return Layout{count, count, count, 0};
                      },
                      [](size_t count, int) { return count; },
                      [](const void* s, void* r, size_t c, ternDataType_t t, ternRedOp_t op, int, ternComm_t comm) {
                        return ternAllReduce(s, r, c, t, op, comm);
                      },
                      [](size_t j, int, int, size_t, int) { return Expected::reduced(j); }};
  return runPerf(spec, argc, argv);
}
