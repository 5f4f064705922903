// reduce_scatter_perf: nccl-tests compatible benchmark of ternReduceScatter. Size is the send buffer.
#include "perf_harness.hpp"

using namespace tern::perf;

int main(int argc, char** argv) {
  CollectiveSpec spec{"reducescatter", "reduce_scatter_perf", true, false,
                      [](int n) { return static_cast<double>(n - 1) / n; },
                      [](size_t count, int n, int rank) {
                        size_t per = count / n;
                        return Layout{count, count, per, 0, static_cast<size_t>(rank) * per};
                      },
                      [](size_t count, int n) { return count / n * n; },
                      [](const void* s, void* r, size_t c, ternDataType_t t, ternRedOp_t op, int, ternComm_t comm) {
                        return ternReduceScatter(s, r, c, t, op, comm);
                      },
                      // Output element j: this rank's block of the reduction; past it (out of place) the receive
                      // buffer's tail, untouched.
                      [](size_t j, int rank, int, size_t per, int) {
                        return j < per ? Expected::reduced(static_cast<size_t>(rank) * per + j) : Expected::unchanged();
                      }};
  return runPerf(spec, argc, argv);
}
