// sendrecv_perf: nccl-tests compatible benchmark of ternSend/ternRecv in a ring (each rank sends to rank+1 and
// receives from rank-1 in one group).
#include "perf_harness.hpp"

using namespace tern::perf;

int main(int argc, char** argv) {
  CollectiveSpec spec{
      "sendrecv", "sendrecv_perf", false, false, [](int) { return 1.0; },
      // "In-place" sends from the second half of the receive allocation (the same pointer for both would race).
      [](size_t count, int, int) {
        return Layout{count, 2 * count, count, count};
      },
      [](size_t count, int) { return count; },
      [](const void* s, void* r, size_t c, ternDataType_t t, ternRedOp_t, int, ternComm_t comm) {
        // Asked once per communicator, as a caller of MPI_Sendrecv or ncclSend keeps its rank at hand.
        static ternComm_t known = nullptr;
        static int n = 0, rank = 0;
        if (comm != known) {
          ternCommCount(comm, &n);
          ternCommUserRank(comm, &rank);
          known = comm;
        }
        ternGroupStart();
        ternSend(s, c, t, (rank + 1) % n, comm);
        ternRecv(r, c, t, (rank - 1 + n) % n, comm);
        return ternGroupEnd();
      },
      // The second half holds nothing (out of place) or the const send data (in place): untouched either way.
      [](size_t j, int rank, int n, size_t count, int) {
        return j < count ? Expected::copied((rank - 1 + n) % n, j) : Expected::unchanged();
      }};
  return runPerf(spec, argc, argv);
}
