// One rank of tests/shm/setup_kill_test.sh: joins the job from the launcher environment (the victim SIGKILLs itself
// at the shared-memory setup step TERN_TEST_SHM_KILL names), then runs one allreduce. Prints what happened; exits
// 0 when the communicator worked, 1 when init or the allreduce failed (as survivors of a killed peer must).
#include <cstdio>

#include "tern/tern.h"

int main() {
  ternComm_t comm = nullptr;
  ternResult_t res = ternCommInitFromEnv(&comm, nullptr);
  if (res != ternSuccess) {
    std::printf("init failed: %s\n", ternGetLastError(nullptr));
    return 1;
  }
  float x = 1.0f;
  res = ternAllReduce(&x, &x, 1, ternFloat32, ternSum, comm);
  if (res != ternSuccess) {
    std::printf("allreduce failed: %s\n", ternGetLastError(comm));
    ternCommAbort(comm);
    return 1;
  }
  std::printf("ok %g\n", static_cast<double>(x));
  ternCommDestroy(comm);
  return 0;
}
