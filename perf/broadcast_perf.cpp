// broadcast_perf: nccl-tests compatible benchmark of ternBroadcast.
#include "perf_harness.hpp"

using namespace tern::perf;

int main(int argc, char** argv) {
  CollectiveSpec spec{"broadcast",
                      "broadcast_perf",
                      false,
                      true,
                      [](int) { return 1.0; },
                      [](size_t count, int, int) {
                        return Layout{count, count, count, 0};
                      },
                      [](size_t count, int) { return count; },
                      [](const void* s, void* r, size_t c, ternDataType_t t, ternRedOp_t, int root, ternComm_t comm) {
                        return ternBroadcast(s, r, c, t, root, comm);
                      },
                      [](size_t j, int, int, size_t, int root) { return Expected::copied(root, j); }};
  return runPerf(spec, argc, argv);
}
