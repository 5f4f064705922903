// all_gather_perf: nccl-tests compatible benchmark of ternAllGather. Size is the gathered (receive) buffer.
#include "perf_harness.hpp"

using namespace tern::perf;

int main(int argc, char** argv) {
  CollectiveSpec spec{
      "allgather",
      "all_gather_perf",
      false,
      false,
      [](int n) { return static_cast<double>(n - 1) / n; },
      [](size_t count, int n, int rank) {
        size_t per = count / n;
        return Layout{per, count, per, per * rank};
      },
      [](size_t count, int n) { return count / n * n; },
      [](const void* s, void* r, size_t c, ternDataType_t t, ternRedOp_t, int, ternComm_t comm) {
        return ternAllGather(s, r, c, t, comm);
      },
      [](size_t j, int, int, size_t per, int) { return Expected::copied(static_cast<int>(j / per), j % per); }};
  return runPerf(spec, argc, argv);
}
