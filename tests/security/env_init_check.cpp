// ternCommInitFromEnv, then one allreduce checked against the closed form: what the launcher tests in
// env_secret_test.sh run as every rank. Prints "ok rank R of N" or the error; the exit code is the ternResult_t.
#include <tern/tern.h>

#include <cstdio>

int main() {
  ternComm_t comm = nullptr;
  ternResult_t r = ternCommInitFromEnv(&comm, nullptr);
  if (r != ternSuccess) {
    std::printf("init failed (%d): %s\n", static_cast<int>(r), ternGetLastError(nullptr));
    return static_cast<int>(r);
  }
  int rank = 0, size = 0;
  ternCommUserRank(comm, &rank);
  ternCommCount(comm, &size);
  int v = rank + 1;
  r = ternAllReduce(&v, &v, 1, ternInt32, ternSum, comm);
  if (r != ternSuccess || v != size * (size + 1) / 2) {
    std::printf("allreduce failed (%d): got %d\n", static_cast<int>(r), v);
    return r != ternSuccess ? static_cast<int>(r) : 1;
  }
  std::printf("ok rank %d of %d\n", rank, size);
  ternCommDestroy(comm);
  return 0;
}
