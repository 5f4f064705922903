// alltoall_perf: nccl-tests compatible benchmark of ternAlltoAll. Size is each rank's send buffer.
#include "perf_harness.hpp"

using namespace tern::perf;

int main(int argc, char** argv) {
  CollectiveSpec spec{"alltoall", "alltoall_perf", false, false, [](int n) { return static_cast<double>(n - 1) / n; },
                      [](size_t count, int n, int) {
                        return Layout{count, count, count / n, 0};
                      },
                      [](size_t count, int n) { return count / n * n; },
                      [](const void* s, void* r, size_t c, ternDataType_t t, ternRedOp_t, int, ternComm_t comm) {
                        return ternAlltoAll(s, r, c, t, comm);
                      },
                      // Block s of my receive buffer is block `rank` of rank s's send buffer.
                      [](size_t j, int rank, int, size_t per, int) {
                        return Expected::copied(static_cast<int>(j / per), static_cast<size_t>(rank) * per + j % per);
                      }};
  return runPerf(spec, argc, argv);
}
