/* A program written for NCCL (compiled against the CUDA toolkit's nccl.h, linked to tern's libnccl.so.2) running
 * on host memory. Every expected value is computed here in plain C from small integers, exact in every datatype
 * (fp16 and bf16 included), so that the check does not depend on the library's own kernels.
 *
 *   nccl_abi_test ranks N   N processes (fork), the id passed through a pipe: every collective, groups, split,
 *                           PreMulSum, config handling, finalize and the error paths
 *   nccl_abi_test initall N one process, N ranks from ncclCommInitAll, driven from one thread in groups
 *   nccl_abi_test groupinit N   one process, N ranks from ncclCommInitRank(Config) inside one group, then split and
 *                           shrink inside groups, and creations failing in a group
 *   nccl_abi_test groupinit-timeout   inits in a group missing a rank: ncclGroupEnd fails at the deadline
 *   nccl_abi_test shrink-dead N   N processes; the last aborts, the survivors shrink it away (NCCL_SHRINK_ABORT)
 *   nccl_abi_test compress exact|compressed   2 processes: TERN_COMPRESS applies to ncclAllReduce
 *   nccl_abi_test abort     2 processes, each blocked in a receive that no one sends; a second thread calls
 *                           ncclCommAbort: the receive returns an error, no hang */
#include <nccl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int g_rank = -1;
static int g_failures = 0;

#define CHECK(cond, ...)                                               \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "rank %d: %s:%d: ", g_rank, __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                    \
      fprintf(stderr, "\n");                                           \
      ++g_failures;                                                    \
    }                                                                  \
  } while (0)

#define NCCL_OK(call)                                                                                \
  do {                                                                                               \
    ncclResult_t r_ = (call);                                                                        \
    if (r_ != ncclSuccess) {                                                                         \
      fprintf(stderr, "rank %d: %s:%d: %s -> %d (%s)\n", g_rank, __FILE__, __LINE__, #call, (int)r_, \
              ncclGetLastError(NULL));                                                               \
      exit(1);                                                                                       \
    }                                                                                                \
  } while (0)

/* An expected failure: the code, and a last-error message containing `words`. */
static void expectError(ncclResult_t got, ncclResult_t want, const char* words, const char* what) {
  const char* msg = ncclGetLastError(NULL);
  CHECK(got == want, "%s: result %d, expected %d (%s)", what, (int)got, (int)want, msg);
  CHECK(words == NULL || strstr(msg, words) != NULL, "%s: last error '%s' does not say '%s'", what, msg, words);
}

/* ---- values: small integers (and halves for avg), exact in every type ---- */

static size_t typeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    default:
      return 8;
  }
}

static uint16_t floatToHalf(float f) { /* exact for the normal values used here */
  uint32_t b;
  memcpy(&b, &f, 4);
  if ((b & 0x7fffffffu) == 0) return (uint16_t)(b >> 16);
  uint32_t sign = (b >> 16) & 0x8000u;
  int e = (int)((b >> 23) & 0xff) - 127 + 15;
  return (uint16_t)(sign | ((uint32_t)e << 10) | ((b >> 13) & 0x3ffu));
}
static float halfToFloat(uint16_t h) {
  if ((h & 0x7fffu) == 0) return (h & 0x8000u) ? -0.0f : 0.0f;
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = ((h >> 10) & 0x1f) - 15 + 127;
  uint32_t b = sign | (e << 23) | ((uint32_t)(h & 0x3ffu) << 13);
  float f;
  memcpy(&f, &b, 4);
  return f;
}

static void store(void* buf, ncclDataType_t t, size_t i, double v) {
  char* p = (char*)buf + i * typeSize(t);
  switch (t) {
    case ncclInt8: {
      int8_t x = (int8_t)v;
      memcpy(p, &x, 1);
      break;
    }
    case ncclUint8: {
      uint8_t x = (uint8_t)v;
      memcpy(p, &x, 1);
      break;
    }
    case ncclInt32: {
      int32_t x = (int32_t)v;
      memcpy(p, &x, 4);
      break;
    }
    case ncclUint32: {
      uint32_t x = (uint32_t)v;
      memcpy(p, &x, 4);
      break;
    }
    case ncclInt64: {
      int64_t x = (int64_t)v;
      memcpy(p, &x, 8);
      break;
    }
    case ncclUint64: {
      uint64_t x = (uint64_t)v;
      memcpy(p, &x, 8);
      break;
    }
    case ncclFloat16: {
      uint16_t x = floatToHalf((float)v);
      memcpy(p, &x, 2);
      break;
    }
    case ncclFloat32: {
      float x = (float)v;
      memcpy(p, &x, 4);
      break;
    }
    case ncclFloat64:
      memcpy(p, &v, 8);
      break;
    case ncclBfloat16: {
      float f = (float)v;
      uint32_t b;
      memcpy(&b, &f, 4);
      uint16_t x = (uint16_t)(b >> 16);
      memcpy(p, &x, 2);
      break;
    }
    default:
      break;
  }
}

static double load(const void* buf, ncclDataType_t t, size_t i) {
  const char* p = (const char*)buf + i * typeSize(t);
  switch (t) {
    case ncclInt8: {
      int8_t x;
      memcpy(&x, p, 1);
      return x;
    }
    case ncclUint8: {
      uint8_t x;
      memcpy(&x, p, 1);
      return x;
    }
    case ncclInt32: {
      int32_t x;
      memcpy(&x, p, 4);
      return x;
    }
    case ncclUint32: {
      uint32_t x;
      memcpy(&x, p, 4);
      return x;
    }
    case ncclInt64: {
      int64_t x;
      memcpy(&x, p, 8);
      return (double)x;
    }
    case ncclUint64: {
      uint64_t x;
      memcpy(&x, p, 8);
      return (double)x;
    }
    case ncclFloat16: {
      uint16_t x;
      memcpy(&x, p, 2);
      return halfToFloat(x);
    }
    case ncclFloat32: {
      float x;
      memcpy(&x, p, 4);
      return x;
    }
    case ncclFloat64: {
      double x;
      memcpy(&x, p, 8);
      return x;
    }
    case ncclBfloat16: {
      uint16_t x;
      memcpy(&x, p, 2);
      uint32_t b = (uint32_t)x << 16;
      float f;
      memcpy(&f, &b, 4);
      return f;
    }
    default:
      return 0;
  }
}

static int isFloat(ncclDataType_t t) {
  return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16;
}

/* Rank r's element i for op: prod uses 1s and 2s (the product stays small), the others 1..7 times (r+1). */
static double value(ncclRedOp_t op, int r, size_t i) {
  if (op == ncclProd) return (double)(1 + (int)((i + (size_t)r) % 2));
  return (double)((r + 1) * (int)(i % 7 + 1));
}

static double expected(ncclRedOp_t op, ncclDataType_t t, int n, size_t i) {
  double acc = value(op, 0, i);
  for (int r = 1; r < n; ++r) {
    double v = value(op, r, i);
    if (op == ncclSum || op == ncclAvg) acc += v;
    if (op == ncclProd) acc *= v;
    if (op == ncclMax && v > acc) acc = v;
    if (op == ncclMin && v < acc) acc = v;
  }
  if (op == ncclAvg) acc = isFloat(t) ? acc / n : (double)((long long)acc / n);
  return acc;
}

static void* alloc(size_t count, ncclDataType_t t) { return calloc(count ? count : 1, typeSize(t)); }

static const ncclDataType_t kTypes[] = {ncclInt8,   ncclUint8,   ncclInt32,   ncclUint32,  ncclInt64,
                                        ncclUint64, ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16};
static const ncclRedOp_t kOps[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
#define NTYPES (sizeof kTypes / sizeof kTypes[0])
#define NOPS (sizeof kOps / sizeof kOps[0])

/* ---- the collectives on a communicator of n ranks ---- */

static void checkAllReduce(ncclComm_t comm, int rank, int n) {
  const size_t count = 1037;
  for (size_t ti = 0; ti < NTYPES; ++ti) {
    for (size_t oi = 0; oi < NOPS; ++oi) {
      ncclDataType_t t = kTypes[ti];
      ncclRedOp_t op = kOps[oi];
      void* s = alloc(count, t);
      void* r = alloc(count, t);
      for (size_t i = 0; i < count; ++i) store(s, t, i, value(op, rank, i));
      NCCL_OK(ncclAllReduce(s, r, count, t, op, comm, NULL));
      NCCL_OK(ncclAllReduce(s, s, count, t, op, comm, NULL)); /* in place */
      for (size_t i = 0; i < count; ++i) {
        double want = expected(op, t, n, i);
        if (load(r, t, i) != want || load(s, t, i) != want) {
          CHECK(0, "allreduce type %d op %d [%zu]: %g / in place %g, expected %g", (int)t, (int)op, i, load(r, t, i),
                load(s, t, i), want);
          break;
        }
      }
      free(s);
      free(r);
    }
  }
}

static void checkRooted(ncclComm_t comm, int rank, int n) {
  const size_t count = 531;
  for (int root = 0; root < n; ++root) {
    /* Broadcast (out of place and the in-place ncclBcast) */
    ncclDataType_t t = root % 2 ? ncclInt8 : ncclFloat32;
    void* s = alloc(count, t);
    void* r = alloc(count, t);
    for (size_t i = 0; i < count; ++i) store(s, t, i, rank == root ? value(ncclSum, root, i) : -1);
    NCCL_OK(ncclBroadcast(s, r, count, t, root, comm, NULL));
    NCCL_OK(ncclBcast(s, count, t, root, comm, NULL));
    for (size_t i = 0; i < count; ++i) {
      if (load(r, t, i) != value(ncclSum, root, i) || load(s, t, i) != value(ncclSum, root, i)) {
        CHECK(0, "broadcast root %d [%zu]: %g / bcast %g", root, i, load(r, t, i), load(s, t, i));
        break;
      }
    }
    /* Reduce: root receives, the others' recvbuff is untouched */
    for (size_t oi = 0; oi < NOPS; ++oi) {
      ncclRedOp_t op = kOps[oi];
      ncclDataType_t rt = kTypes[(oi + (size_t)root) % NTYPES];
      void* rs = alloc(count, rt);
      void* rr = alloc(count, rt);
      for (size_t i = 0; i < count; ++i) {
        store(rs, rt, i, value(op, rank, i));
        store(rr, rt, i, 99);
      }
      NCCL_OK(ncclReduce(rs, rr, count, rt, op, root, comm, NULL));
      for (size_t i = 0; i < count; ++i) {
        double want = rank == root ? expected(op, rt, n, i) : 99;
        if (load(rr, rt, i) != want) {
          CHECK(0, "reduce root %d type %d op %d [%zu]: %g, expected %g", root, (int)rt, (int)op, i, load(rr, rt, i),
                want);
          break;
        }
      }
      free(rs);
      free(rr);
    }
    /* Gather and Scatter (built on grouped send/recv), out of place and in place */
    ncclDataType_t gt = ncclInt32;
    void* gs = alloc(count, gt);
    void* gr = alloc(count * n, gt);
    for (size_t i = 0; i < count; ++i) store(gs, gt, i, rank * 1000 + (int)(i % 500));
    NCCL_OK(ncclGather(gs, gr, count, gt, root, comm, NULL));
    if (rank == root) {
      for (int p = 0; p < n; ++p) {
        for (size_t i = 0; i < count; ++i) {
          if (load(gr, gt, p * count + i) != p * 1000 + (int)(i % 500)) {
            CHECK(0, "gather root %d from %d [%zu]: %g", root, p, i, load(gr, gt, p * count + i));
            break;
          }
        }
      }
      /* in place: root's block already sits at recvbuff + root*count */
      memset(gr, 0, count * n * typeSize(gt));
      memcpy((char*)gr + root * count * typeSize(gt), gs, count * typeSize(gt));
      NCCL_OK(ncclGather((char*)gr + root * count * typeSize(gt), gr, count, gt, root, comm, NULL));
    } else {
      NCCL_OK(ncclGather(gs, NULL, count, gt, root, comm, NULL));
    }
    if (rank == root) {
      for (int p = 0; p < n; ++p) {
        if (load(gr, gt, p * count + 7) != p * 1000 + 7) CHECK(0, "in-place gather root %d block %d", root, p);
      }
    }
    void* ss = alloc(count * n, gt);
    void* sr = alloc(count, gt);
    for (int p = 0; p < n; ++p) {
      for (size_t i = 0; i < count; ++i) store(ss, gt, p * count + i, rank == root ? p * 77 + (int)i : -5);
    }
    NCCL_OK(ncclScatter(ss, sr, count, gt, root, comm, NULL));
    for (size_t i = 0; i < count; ++i) {
      if (load(sr, gt, i) != rank * 77 + (int)i) {
        CHECK(0, "scatter root %d [%zu]: %g, expected %d", root, i, load(sr, gt, i), rank * 77 + (int)i);
        break;
      }
    }
    free(s);
    free(r);
    free(gs);
    free(gr);
    free(ss);
    free(sr);
  }
}

static void checkGatherScatterAll(ncclComm_t comm, int rank, int n) {
  const size_t count = 263;
  /* AllGather, out of place and in place */
  ncclDataType_t t = ncclUint32;
  void* s = alloc(count, t);
  void* r = alloc(count * n, t);
  for (size_t i = 0; i < count; ++i) store(s, t, i, rank * 10000 + (int)i);
  NCCL_OK(ncclAllGather(s, r, count, t, comm, NULL));
  void* ip = alloc(count * n, t);
  memcpy((char*)ip + rank * count * typeSize(t), s, count * typeSize(t));
  NCCL_OK(ncclAllGather((char*)ip + rank * count * typeSize(t), ip, count, t, comm, NULL));
  for (int p = 0; p < n; ++p) {
    for (size_t i = 0; i < count; ++i) {
      double want = p * 10000 + (int)i;
      if (load(r, t, p * count + i) != want || load(ip, t, p * count + i) != want) {
        CHECK(0, "allgather block %d [%zu]: %g / in place %g", p, i, load(r, t, p * count + i),
              load(ip, t, p * count + i));
        break;
      }
    }
  }
  /* ReduceScatter: every type, sum and max */
  for (size_t ti = 0; ti < NTYPES; ++ti) {
    ncclDataType_t rt = kTypes[ti];
    ncclRedOp_t op = ti % 2 ? ncclMax : ncclSum;
    void* rs = alloc(count * n, rt);
    void* rr = alloc(count, rt);
    for (size_t i = 0; i < count * n; ++i) store(rs, rt, i, value(op, rank, i));
    NCCL_OK(ncclReduceScatter(rs, rr, count, rt, op, comm, NULL));
    for (size_t i = 0; i < count; ++i) {
      double want = expected(op, rt, n, rank * count + i);
      if (load(rr, rt, i) != want) {
        CHECK(0, "reducescatter type %d [%zu]: %g, expected %g", (int)rt, i, load(rr, rt, i), want);
        break;
      }
    }
    free(rs);
    free(rr);
  }
  /* AlltoAll: block p of rank q's output came from rank p's block q */
  void* as = alloc(count * n, ncclInt64);
  void* ar = alloc(count * n, ncclInt64);
  for (int p = 0; p < n; ++p) {
    for (size_t i = 0; i < count; ++i) store(as, ncclInt64, p * count + i, rank * 1000000 + p * 1000 + (int)i);
  }
  NCCL_OK(ncclAlltoAll(as, ar, count, ncclInt64, comm, NULL));
  for (int p = 0; p < n; ++p) {
    for (size_t i = 0; i < count; ++i) {
      double want = p * 1000000 + rank * 1000 + (int)i;
      if (load(ar, ncclInt64, p * count + i) != want) {
        CHECK(0, "alltoall from %d [%zu]: %g, expected %g", p, i, load(ar, ncclInt64, p * count + i), want);
        break;
      }
    }
  }
  free(s);
  free(r);
  free(ip);
  free(as);
  free(ar);
}

static void checkGroups(ncclComm_t comm, int rank, int n) {
  const size_t count = 1000;
  /* A ring exchange: both directions at once, which only works because the group posts them together */
  int* toNext = calloc(count, sizeof(int));
  int* toPrev = calloc(count, sizeof(int));
  int* fromPrev = calloc(count, sizeof(int));
  int* fromNext = calloc(count, sizeof(int));
  for (size_t i = 0; i < count; ++i) {
    toNext[i] = rank * 100000 + (int)i;
    toPrev[i] = -(rank * 100000 + (int)i);
  }
  int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclSend(toNext, count, ncclInt32, next, comm, NULL));
  NCCL_OK(ncclSend(toPrev, count, ncclInt32, prev, comm, NULL));
  NCCL_OK(ncclRecv(fromPrev, count, ncclInt32, prev, comm, NULL));
  NCCL_OK(ncclRecv(fromNext, count, ncclInt32, next, comm, NULL));
  NCCL_OK(ncclGroupEnd());
  for (size_t i = 0; i < count; ++i) {
    if (fromPrev[i] != prev * 100000 + (int)i || fromNext[i] != -(next * 100000 + (int)i)) {
      CHECK(0, "grouped send/recv [%zu]: from prev %d, from next %d", i, fromPrev[i], fromNext[i]);
      break;
    }
  }
  /* Collectives inside a (nested) group run at the outermost ncclGroupEnd, in order */
  float* a = calloc(count, sizeof(float));
  float* b = calloc(count * n, sizeof(float));
  for (size_t i = 0; i < count; ++i) a[i] = (float)(rank + 1);
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclAllReduce(a, a, count, ncclFloat32, ncclSum, comm, NULL));
  NCCL_OK(ncclGroupEnd());
  NCCL_OK(ncclAllGather(fromPrev, b, count, ncclInt32, comm, NULL));
  NCCL_OK(ncclGroupEnd());
  for (size_t i = 0; i < count; ++i) {
    if (a[i] != (float)(n * (n + 1) / 2)) {
      CHECK(0, "grouped allreduce [%zu]: %g", i, a[i]);
      break;
    }
  }
  for (int p = 0; p < n; ++p) {
    int got;
    memcpy(&got, (char*)b + (p * count + 3) * sizeof(int), sizeof got);
    CHECK(got == ((p + n - 1) % n) * 100000 + 3, "grouped allgather block %d: %d", p, got);
  }
  free(toNext);
  free(toPrev);
  free(fromPrev);
  free(fromNext);
  free(a);
  free(b);
}

static void checkPreMulSum(ncclComm_t comm, int rank, int n) {
  const size_t count = 301;
  /* float: x * 0.5 summed */
  float half = 0.5f;
  ncclRedOp_t op;
  NCCL_OK(ncclRedOpCreatePreMulSum(&op, &half, ncclFloat32, ncclScalarHostImmediate, comm));
  CHECK((int)op >= (int)ncclNumOps, "PreMulSum op %d is a built-in value", (int)op);
  float* s = calloc(count, sizeof(float));
  float* r = calloc(count, sizeof(float));
  for (size_t i = 0; i < count; ++i) s[i] = (float)value(ncclSum, rank, i);
  NCCL_OK(ncclAllReduce(s, r, count, ncclFloat32, op, comm, NULL));
  for (size_t i = 0; i < count; ++i) {
    double want = expected(ncclSum, ncclFloat32, n, i) * 0.5;
    if (r[i] != want) {
      CHECK(0, "PreMulSum float [%zu]: %g, expected %g", i, r[i], want);
      break;
    }
  }
  CHECK(s[5] == (float)value(ncclSum, rank, 5), "PreMulSum changed sendbuff");
  /* int32 scalar 3 through ReduceScatter, bf16 scalar 2 through Reduce to root 0 */
  int32_t three = 3;
  ncclRedOp_t op3;
  NCCL_OK(ncclRedOpCreatePreMulSum(&op3, &three, ncclInt32, ncclScalarHostImmediate, comm));
  int32_t* is = calloc(count * n, sizeof(int32_t));
  int32_t* ir = calloc(count, sizeof(int32_t));
  for (size_t i = 0; i < count * n; ++i) is[i] = (int32_t)value(ncclSum, rank, i);
  NCCL_OK(ncclReduceScatter(is, ir, count, ncclInt32, op3, comm, NULL));
  for (size_t i = 0; i < count; ++i) {
    if (ir[i] != 3 * expected(ncclSum, ncclInt32, n, rank * count + i)) {
      CHECK(0, "PreMulSum int32 [%zu]: %d", i, ir[i]);
      break;
    }
  }
  uint16_t two;
  store(&two, ncclBfloat16, 0, 2.0);
  ncclRedOp_t op2;
  NCCL_OK(ncclRedOpCreatePreMulSum(&op2, &two, ncclBfloat16, ncclScalarHostImmediate, comm));
  void* bs = alloc(count, ncclBfloat16);
  void* br = alloc(count, ncclBfloat16);
  for (size_t i = 0; i < count; ++i) store(bs, ncclBfloat16, i, value(ncclSum, rank, i));
  NCCL_OK(ncclReduce(bs, br, count, ncclBfloat16, op2, 0, comm, NULL));
  if (rank == 0) {
    for (size_t i = 0; i < count; ++i) {
      if (load(br, ncclBfloat16, i) != 2 * expected(ncclSum, ncclBfloat16, n, i)) {
        CHECK(0, "PreMulSum bf16 [%zu]: %g", i, load(br, ncclBfloat16, i));
        break;
      }
    }
  }
  /* the op belongs to its datatype; destroyed ops are gone; device-resident scalars are refused */
  expectError(ncclAllReduce(s, r, count, ncclFloat64, op, comm, NULL), ncclInvalidArgument, "datatype",
              "PreMulSum with another datatype");
  NCCL_OK(ncclRedOpDestroy(op, comm));
  NCCL_OK(ncclRedOpDestroy(op3, comm));
  NCCL_OK(ncclRedOpDestroy(op2, comm));
  expectError(ncclAllReduce(s, r, count, ncclFloat32, op, comm, NULL), ncclInvalidArgument, "op",
              "destroyed PreMulSum op");
  expectError(ncclRedOpDestroy(ncclSum, comm), ncclInvalidArgument, NULL, "destroying a built-in op");
  expectError(ncclRedOpCreatePreMulSum(&op, &half, ncclFloat32, ncclScalarDevice, comm), ncclInvalidUsage,
              "device path", "device-resident PreMulSum scalar");
  free(s);
  free(r);
  free(is);
  free(ir);
  free(bs);
  free(br);
}

static void checkSplit(ncclComm_t comm, int rank, int n) {
  /* colors by parity, keys reversing the order; with 3+ ranks rank 0 stays out (NCCL_SPLIT_NOCOLOR) */
  int color = (n > 2 && rank == 0) ? NCCL_SPLIT_NOCOLOR : rank % 2;
  ncclComm_t sub = (ncclComm_t)0x1;
  NCCL_OK(ncclCommSplit(comm, color, -rank, &sub, NULL));
  if (color == NCCL_SPLIT_NOCOLOR) {
    CHECK(sub == NULL, "NOCOLOR rank got a communicator");
    return;
  }
  int members[8], m = 0;
  for (int r = n - 1; r >= 0; --r) {
    if (!(n > 2 && r == 0) && r % 2 == color) members[m++] = r;
  }
  int subRank = -1, subSize = -1;
  NCCL_OK(ncclCommUserRank(sub, &subRank));
  NCCL_OK(ncclCommCount(sub, &subSize));
  CHECK(subSize == m, "split size %d, expected %d", subSize, m);
  CHECK(subRank >= 0 && subRank < m && members[subRank] == rank, "split rank %d is not old rank %d's place", subRank,
        rank);
  int mine = rank + 1, sum = 0, want = 0;
  for (int i = 0; i < m; ++i) want += members[i] + 1;
  NCCL_OK(ncclAllReduce(&mine, &sum, 1, ncclInt32, ncclSum, sub, NULL));
  CHECK(sum == want, "allreduce on the split communicator: %d, expected %d", sum, want);
  /* a split of the split, with a config */
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = "split-of-split";
  ncclComm_t again = NULL;
  NCCL_OK(ncclCommSplit(sub, 0, subRank, &again, &config));
  int againSize = 0;
  NCCL_OK(ncclCommCount(again, &againSize));
  CHECK(againSize == m, "second split size %d", againSize);
  NCCL_OK(ncclCommDestroy(again));
  NCCL_OK(ncclCommDestroy(sub));
}

/* Sum over the members of (old rank + 1), on a communicator whose rank i is old rank members[i]. */
static void checkSumOver(ncclComm_t sub, const int* members, int m, int oldRank, const char* what) {
  int subRank = -1, subSize = -1;
  NCCL_OK(ncclCommUserRank(sub, &subRank));
  NCCL_OK(ncclCommCount(sub, &subSize));
  CHECK(subSize == m, "%s: size %d, expected %d", what, subSize, m);
  CHECK(subRank >= 0 && subRank < m && members[subRank] == oldRank, "%s: rank %d is not old rank %d's place", what,
        subRank, oldRank);
  int mine = oldRank + 1, sum = 0, want = 0;
  for (int i = 0; i < m; ++i) want += members[i] + 1;
  NCCL_OK(ncclAllReduce(&mine, &sum, 1, ncclInt32, ncclSum, sub, NULL));
  CHECK(sum == want, "%s: allreduce %d, expected %d", what, sum, want);
}

/* ncclCommShrink: the excluded ranks do not call; the survivors are renumbered in order. */
static void checkShrink(ncclComm_t comm, int rank, int n) {
  ncclComm_t none = (ncclComm_t)0x1;
  int self = rank, outOfRange = n, twice[2] = {0, 0};
  expectError(ncclCommShrink(comm, &self, 1, &none, NULL, NCCL_SHRINK_DEFAULT), ncclInvalidArgument,
              "excluded ranks do not call", "shrink excluding the caller");
  CHECK(none == NULL, "a refused shrink left *newcomm set");
  expectError(ncclCommShrink(comm, &outOfRange, 1, &none, NULL, NCCL_SHRINK_DEFAULT), ncclInvalidArgument,
              "out of range", "shrink excluding a rank out of range");
  if (rank != 0) {
    expectError(ncclCommShrink(comm, twice, 2, &none, NULL, NCCL_SHRINK_DEFAULT), ncclInvalidArgument, "twice",
                "shrink excluding a rank twice");
  }
  expectError(ncclCommShrink(comm, NULL, 0, &none, NULL, 0x10), ncclInvalidArgument, "shrinkFlags",
              "shrink with unknown flags");
  int members[8], m = 0;
  /* nothing excluded: a copy of the parent */
  for (int r = 0; r < n; ++r) members[m++] = r;
  ncclComm_t copy = NULL;
  NCCL_OK(ncclCommShrink(comm, NULL, 0, &copy, NULL, NCCL_SHRINK_DEFAULT));
  checkSumOver(copy, members, m, rank, "shrink excluding nobody");
  NCCL_OK(ncclCommDestroy(copy));
  if (n >= 2) {
    /* the last rank leaves; it does not call */
    int last = n - 1;
    m = 0;
    for (int r = 0; r < n - 1; ++r) members[m++] = r;
    if (rank != last) {
      ncclComm_t sub = NULL;
      NCCL_OK(ncclCommShrink(comm, &last, 1, &sub, NULL, NCCL_SHRINK_DEFAULT));
      checkSumOver(sub, members, m, rank, "shrink without the last rank");
      NCCL_OK(ncclCommDestroy(sub));
    }
  }
  if (n >= 3) {
    /* ranks 0 and 2 leave (listed out of order); the others move down; named by a config; NCCL_SHRINK_ABORT */
    int leave[2] = {2, 0};
    m = 0;
    for (int r = 1; r < n; ++r) {
      if (r != 2) members[m++] = r;
    }
    if (rank != 0 && rank != 2) {
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.commName = "shrunk";
      ncclComm_t sub = NULL;
      NCCL_OK(ncclCommShrink(comm, leave, 2, &sub, &config, NCCL_SHRINK_ABORT));
      checkSumOver(sub, members, m, rank, "shrink without ranks 0 and 2");
      NCCL_OK(ncclCommDestroy(sub));
    }
  }
  /* the parent still serves every rank */
  int one = 1, total = 0;
  NCCL_OK(ncclAllReduce(&one, &total, 1, ncclInt32, ncclSum, comm, NULL));
  CHECK(total == n, "allreduce on the parent after the shrinks: %d", total);
}

static void checkErrors(ncclComm_t comm, int rank, int n) {
  float buf[16] = {0};
  float out[16 * 8] = {0};
  (void)rank;
  expectError(ncclAllReduce(buf, buf, 4, (ncclDataType_t)99, ncclSum, comm, NULL), ncclInvalidArgument, "datatype",
              "bad dtype");
  expectError(ncclAllReduce(buf, buf, 4, ncclFloat8e4m3, ncclSum, comm, NULL), ncclInvalidArgument, "fp8", "fp8 dtype");
  expectError(ncclAllReduce(buf, buf, 4, ncclFloat32, (ncclRedOp_t)99, comm, NULL), ncclInvalidArgument, "op",
              "bad op");
  expectError(ncclBroadcast(buf, buf, 4, ncclFloat32, n, comm, NULL), ncclInvalidArgument, "root", "bad root");
  expectError(ncclReduce(buf, buf, 4, ncclFloat32, ncclSum, -1, comm, NULL), ncclInvalidArgument, "root",
              "negative root");
  expectError(ncclGather(buf, out, 4, ncclFloat32, n + 3, comm, NULL), ncclInvalidArgument, "root", "bad gather root");
  expectError(ncclSend(buf, 4, ncclFloat32, n, comm, NULL), ncclInvalidArgument, "peer", "bad peer");
  expectError(ncclRecv(buf, 4, ncclFloat32, -1, comm, NULL), ncclInvalidArgument, "peer", "negative peer");
  expectError(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, NULL, NULL), ncclInvalidArgument, "NULL", "null comm");
  expectError(ncclAllReduce(NULL, buf, 4, ncclFloat32, ncclSum, comm, NULL), ncclInvalidArgument, "NULL",
              "null sendbuff");
  expectError(ncclGroupEnd(), ncclInvalidUsage, "ncclGroupEnd", "unmatched ncclGroupEnd");
  /* A device-like buffer: CUDA keeps device memory in ranges the host cannot read; one such range is made here.
   * Device buffers go to tern's stream-ordered calls, which need the CUDA driver: without one (this test runs
   * where there is none) the call says so, never touching the buffer. */
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  void* device = mmap(NULL, page * 4, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(device != MAP_FAILED, "mmap");
  expectError(ncclAllReduce(device, buf, 4, ncclFloat32, ncclSum, comm, NULL), ncclInvalidUsage, "CUDA driver",
              "device sendbuff");
  expectError(ncclAllGather(buf, device, 4, ncclFloat32, comm, NULL), ncclInvalidUsage, "CUDA driver",
              "device recvbuff");
  expectError(ncclSend(device, 4, ncclFloat32, 0, comm, NULL), ncclInvalidUsage, "CUDA driver", "device send");
  /* the last byte counts too: a host buffer running into the device range */
  char* edge = mmap(NULL, page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(edge != MAP_FAILED && mprotect(edge + page, page, PROT_NONE) == 0, "mmap/mprotect");
  expectError(ncclBroadcast(edge + page - 8, edge + page - 8, 4, ncclFloat32, 0, comm, NULL), ncclInvalidUsage,
              "CUDA driver", "buffer ending in a device range");
  void* handle = NULL;
  expectError(ncclCommRegister(comm, device, page, &handle), ncclInvalidUsage, "device path", "register device");
  NCCL_OK(ncclCommRegister(comm, buf, sizeof buf, &handle));
  NCCL_OK(ncclCommDeregister(comm, handle));
  munmap(device, page * 4);
  munmap(edge, page * 2);
  /* what tern cannot do: refused with a reason, never a crash */
  expectError(ncclCommRevoke(comm, 0), ncclInvalidUsage, "not supported", "revoke");
  ncclWindow_t win = NULL;
  expectError(ncclCommWindowRegister(comm, buf, sizeof buf, &win, 0), ncclInvalidUsage, "device path",
              "window register");
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  expectError(ncclGroupSimulateEnd(&sim), ncclInvalidUsage, "not supported", "group simulate");
  /* nothing above left the communicator failed */
  ncclResult_t async = ncclInternalError;
  NCCL_OK(ncclCommGetAsyncError(comm, &async));
  CHECK(async == ncclSuccess, "async error %d after refused calls", (int)async);
}

static void checkConfigs(void) {
  ncclUniqueId unused;
  memset(&unused, 0, sizeof unused);
  ncclComm_t c = NULL;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.netName = "IB";
  expectError(ncclCommInitRankConfig(&c, 2, unused, 0, &config), ncclInvalidUsage, "netName", "config netName");
  ncclConfig_t tc = NCCL_CONFIG_INITIALIZER;
  tc.trafficClass = 5;
  expectError(ncclCommInitRankConfig(&c, 2, unused, 0, &tc), ncclInvalidUsage, "trafficClass", "config trafficClass");
  ncclConfig_t badMagic = NCCL_CONFIG_INITIALIZER;
  badMagic.magic = 0x1234;
  expectError(ncclCommInitRankConfig(&c, 2, unused, 0, &badMagic), ncclInvalidArgument, "NCCL_CONFIG_INITIALIZER",
              "config magic");
  ncclConfig_t badBlocking = NCCL_CONFIG_INITIALIZER;
  badBlocking.blocking = 7;
  expectError(ncclCommInitRankConfig(&c, 2, unused, 0, &badBlocking), ncclInvalidArgument, "blocking",
              "config blocking");
  ncclConfig_t badCtas = NCCL_CONFIG_INITIALIZER;
  badCtas.minCTAs = 0;
  expectError(ncclCommInitRankConfig(&c, 2, unused, 0, &badCtas), ncclInvalidArgument, "minCTAs", "config minCTAs");
  CHECK(c == NULL, "a refused config left a communicator");
}

/* A rank's whole program. */
static int runRank(int rank, int n, ncclUniqueId id) {
  g_rank = rank;
  int version = 0;
  NCCL_OK(ncclGetVersion(&version));
  CHECK(version >= 23007, "ncclGetVersion %d is older than 2.30.7", version);
  CHECK(strlen(ncclGetErrorString(ncclInvalidUsage)) > 0, "error string");
  checkConfigs();
  /* nonblocking, named communicator: calls complete before returning */
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.commName = "nccl-abi-test";
  config.cgaClusterSize = 2; /* GPU launch hints: accepted, no effect on host memory */
  config.splitShare = 1;
  ncclComm_t comm = NULL;
  ncclResult_t init = ncclCommInitRankConfig(&comm, n, id, rank, &config);
  if (init == ncclInProgress) {
    ncclResult_t state = ncclInProgress;
    while (state == ncclInProgress) NCCL_OK(ncclCommGetAsyncError(comm, &state));
    init = state;
  }
  NCCL_OK(init);
  int got = -1;
  NCCL_OK(ncclCommUserRank(comm, &got));
  CHECK(got == rank, "user rank %d", got);
  NCCL_OK(ncclCommCount(comm, &got));
  CHECK(got == n, "count %d", got);
  checkAllReduce(comm, rank, n);
  checkRooted(comm, rank, n);
  checkGatherScatterAll(comm, rank, n);
  checkGroups(comm, rank, n);
  checkPreMulSum(comm, rank, n);
  checkSplit(comm, rank, n);
  checkShrink(comm, rank, n);
  checkErrors(comm, rank, n);
  /* after ncclCommFinalize no work is accepted; ncclCommDestroy still is */
  NCCL_OK(ncclCommFinalize(comm));
  float x = 1;
  expectError(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, NULL), ncclInvalidUsage, "finalized",
              "allreduce after finalize");
  NCCL_OK(ncclCommDestroy(comm));
  expectError(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, NULL), ncclInvalidArgument, "destroyed",
              "allreduce after destroy");
  return g_failures == 0 ? 0 : 1;
}

/* ---- process plumbing ---- */

static pid_t g_children[16];
static int g_nchildren = 0;

static void killChildren(int sig) {
  (void)sig;
  for (int i = 0; i < g_nchildren; ++i) kill(g_children[i], SIGKILL);
  _exit(124);
}

/* Forks n ranks; rank 0 creates the id and hands it to the others through a pipe. */
static int forkRanks(int n, int (*body)(int, int, ncclUniqueId), int deadlineSeconds) {
  int fds[2];
  if (pipe(fds) != 0) return 1;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      ncclUniqueId id;
      g_rank = r;
      if (r == 0) {
        NCCL_OK(ncclGetUniqueId(&id));
        for (int i = 1; i < n; ++i) {
          if (write(fds[1], &id, sizeof id) != (ssize_t)sizeof id) _exit(1);
        }
      } else if (read(fds[0], &id, sizeof id) != (ssize_t)sizeof id) {
        _exit(1);
      }
      close(fds[0]);
      close(fds[1]);
      _exit(body(r, n, id));
    }
    g_children[g_nchildren++] = pid;
  }
  close(fds[0]);
  close(fds[1]);
  signal(SIGALRM, killChildren);
  alarm((unsigned)deadlineSeconds);
  int failed = 0;
  for (int i = 0; i < n; ++i) {
    int status = 0;
    waitpid(g_children[i], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "rank %d failed (status 0x%x)\n", i, status);
      failed = 1;
    }
  }
  alarm(0);
  return failed;
}

/* One process, n ranks: ncclCommInitAll and one thread driving every rank inside groups. */
static int runInitAll(int n) {
  g_rank = 0;
  ncclComm_t comms[8];
  NCCL_OK(ncclCommInitAll(comms, n, NULL));
  const size_t count = 777;
  double* bufs[8];
  double* ring[8];
  for (int r = 0; r < n; ++r) {
    int got = -1;
    NCCL_OK(ncclCommUserRank(comms[r], &got));
    CHECK(got == r, "comm %d has rank %d", r, got);
    bufs[r] = calloc(count, sizeof(double));
    ring[r] = calloc(count, sizeof(double));
    for (size_t i = 0; i < count; ++i) bufs[r][i] = value(ncclMax, r, i);
  }
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r) NCCL_OK(ncclAllReduce(bufs[r], bufs[r], count, ncclFloat64, ncclMax, comms[r], NULL));
  NCCL_OK(ncclGroupEnd());
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r) {
    NCCL_OK(ncclSend(bufs[r], count, ncclFloat64, (r + 1) % n, comms[r], NULL));
    NCCL_OK(ncclRecv(ring[r], count, ncclFloat64, (r + n - 1) % n, comms[r], NULL));
  }
  NCCL_OK(ncclGroupEnd());
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) {
      double want = expected(ncclMax, ncclFloat64, n, i);
      if (bufs[r][i] != want || ring[r][i] != want) {
        CHECK(0, "initall comm %d [%zu]: %g / ring %g, expected %g", r, i, bufs[r][i], ring[r][i], want);
        break;
      }
    }
    NCCL_OK(ncclCommDestroy(comms[r]));
    free(bufs[r]);
    free(ring[r]);
  }
  return g_failures == 0 ? 0 : 1;
}

/* Sums (old rank + 1) over communicators comms[0..m) of one process (comms[i] is old rank members[i]), the calls
 * issued from this one thread inside a group. */
static void checkGroupSum(ncclComm_t* comms, const int* members, int m, const char* what) {
  int mine[8], sums[8];
  NCCL_OK(ncclGroupStart());
  for (int i = 0; i < m; ++i) {
    mine[i] = members[i] + 1;
    sums[i] = 0;
    NCCL_OK(ncclAllReduce(&mine[i], &sums[i], 1, ncclInt32, ncclSum, comms[i], NULL));
  }
  NCCL_OK(ncclGroupEnd());
  int want = 0;
  for (int i = 0; i < m; ++i) want += members[i] + 1;
  for (int i = 0; i < m; ++i) {
    int rank = -1, size = -1;
    NCCL_OK(ncclCommUserRank(comms[i], &rank));
    NCCL_OK(ncclCommCount(comms[i], &size));
    CHECK(rank == i && size == m, "%s: comm %d has rank %d of %d, expected %d of %d", what, i, rank, size, i, m);
    CHECK(sums[i] == want, "%s: comm %d summed %d, expected %d", what, i, sums[i], want);
  }
}

/* One process, n ranks: ncclCommInitRank / ncclCommInitRankConfig for every rank inside one group (the nccl-tests
 * pattern), then split and shrink of all of them inside groups, and the errors of creations in a group. */
static int runGroupInit(int n) {
  g_rank = 0;
  if (n < 1 || n > 8) return 2;
  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  ncclComm_t comms[8];
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = "group-init";
  config.blocking = 0;
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r) {
    if (r % 2 == 0) {
      NCCL_OK(ncclCommInitRank(&comms[r], n, id, r));
    } else {
      NCCL_OK(ncclCommInitRankConfig(&comms[r], n, id, r, &config));
    }
  }
  ncclResult_t end = ncclGroupEnd();
  if (end == ncclInProgress) {
    for (int r = 0; r < n; ++r) {
      ncclResult_t state = ncclInProgress;
      while (state == ncclInProgress) NCCL_OK(ncclCommGetAsyncError(comms[r], &state));
      NCCL_OK(state);
    }
    end = ncclSuccess;
  }
  NCCL_OK(end);
  int members[8] = {0};
  for (int r = 0; r < n; ++r) members[r] = r;
  checkGroupSum(comms, members, n, "group init");

  /* split by parity, every rank's split in one group */
  ncclComm_t halves[8];
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r) NCCL_OK(ncclCommSplit(comms[r], r % 2, r, &halves[r], NULL));
  NCCL_OK(ncclGroupEnd());
  for (int color = 0; color < 2 && color < n; ++color) {
    ncclComm_t side[8];
    int m = 0;
    for (int r = color; r < n; r += 2) {
      members[m] = r;
      side[m++] = halves[r];
    }
    checkGroupSum(side, members, m, color == 0 ? "group split, even ranks" : "group split, odd ranks");
  }
  for (int r = 0; r < n; ++r) NCCL_OK(ncclCommDestroy(halves[r]));

  /* two splits of each communicator in one group, the second reversing the order: one parent's run in call order */
  ncclComm_t ahead[8], reversed[8], side[8];
  for (int r = 0; r < n; ++r) members[r] = r;
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r) {
    NCCL_OK(ncclCommSplit(comms[r], 0, r, &ahead[r], NULL));
    NCCL_OK(ncclCommSplit(comms[r], 0, -r, &reversed[r], NULL));
  }
  NCCL_OK(ncclGroupEnd());
  checkGroupSum(ahead, members, n, "first of two splits in a group");
  for (int i = 0; i < n; ++i) {
    members[i] = n - 1 - i;
    side[i] = reversed[n - 1 - i];
  }
  checkGroupSum(side, members, n, "second of two splits in a group");
  for (int r = 0; r < n; ++r) {
    NCCL_OK(ncclCommDestroy(ahead[r]));
    NCCL_OK(ncclCommDestroy(reversed[r]));
  }

  /* shrink without rank 1 (it does not call), the survivors' shrinks in one group */
  if (n >= 2) {
    int leave = 1, m = 0;
    ncclComm_t shrunk[8];
    NCCL_OK(ncclGroupStart());
    for (int r = 0; r < n; ++r) {
      if (r == leave) continue;
      members[m] = r;
      NCCL_OK(ncclCommShrink(comms[r], &leave, 1, &shrunk[m++], NULL, NCCL_SHRINK_DEFAULT));
    }
    NCCL_OK(ncclGroupEnd());
    checkGroupSum(shrunk, members, m, "group shrink");
    for (int i = 0; i < m; ++i) NCCL_OK(ncclCommDestroy(shrunk[i]));
  }
  for (int r = 0; r < n; ++r) NCCL_OK(ncclCommDestroy(comms[r]));

  /* a bad argument is reported by the call itself; the group then has nothing to create */
  ncclComm_t c = (ncclComm_t)0x1;
  NCCL_OK(ncclGroupStart());
  expectError(ncclCommInitRank(&c, 2, id, 5), ncclInvalidArgument, "out of range", "init rank out of range in a group");
  NCCL_OK(ncclGroupEnd());
  CHECK(c == NULL, "a refused init left *comm set");

  /* a creation failing at GroupEnd: ncclGroupEnd's result and ncclGetLastError say so; the group's other
   * creation (a one-rank communicator) is made and usable */
  ncclUniqueId solo, notAnId;
  NCCL_OK(ncclGetUniqueId(&solo));
  memset(&notAnId, 0, sizeof notAnId);
  ncclComm_t good = NULL, bad = (ncclComm_t)0x1;
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclCommInitRank(&good, 1, solo, 0));
  NCCL_OK(ncclCommInitRank(&bad, 2, notAnId, 0));
  expectError(ncclGroupEnd(), ncclInvalidArgument, "1 of the group's 2 communicator creations failed",
              "group with a failing init");
  CHECK(strstr(ncclGetLastError(NULL), "ncclCommInitRank of rank 0 of 2") != NULL,
        "ncclGetLastError '%s' does not name the failed init", ncclGetLastError(NULL));
  CHECK(bad == NULL, "the failed init left *comm set");
  CHECK(good != NULL, "the group's good init made no communicator");
  if (good != NULL) {
    members[0] = 0;
    checkGroupSum(&good, members, 1, "the good init of a failing group");
    NCCL_OK(ncclCommDestroy(good));
  }
  return g_failures == 0 ? 0 : 1;
}

/* Ranks 0 and 1 of a 3-rank communicator created in one group, rank 2 never joining: ncclGroupEnd returns the
 * inits' error once their deadline (TERN_TIMEOUT) passes, instead of waiting forever. */
static int runGroupInitTimeout(void) {
  g_rank = 0;
  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  ncclComm_t comms[2] = {(ncclComm_t)0x1, (ncclComm_t)0x1};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < 2; ++r) NCCL_OK(ncclCommInitRank(&comms[r], 3, id, r));
  ncclResult_t end = ncclGroupEnd();
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  const char* msg = ncclGetLastError(NULL);
  fprintf(stderr, "group init with a missing rank -> %d after %.2f s: %s\n", (int)end, seconds, msg);
  CHECK(end != ncclSuccess && end != ncclInProgress, "ncclGroupEnd of inits missing a rank returned %d", (int)end);
  CHECK(strstr(msg, "ncclGroupEnd") != NULL && strstr(msg, "ncclCommInitRank") != NULL,
        "ncclGetLastError '%s' does not name the group's init", msg);
  CHECK(comms[0] == NULL && comms[1] == NULL, "failed inits left their communicators set");
  CHECK(seconds < 30, "ncclGroupEnd took %.1f s", seconds);
  return g_failures == 0 ? 0 : 1;
}

static void* abortLater(void* comm) {
  struct timespec wait = {0, 300 * 1000 * 1000};
  nanosleep(&wait, NULL);
  ncclResult_t r = ncclCommAbort((ncclComm_t)comm);
  if (r != ncclSuccess) fprintf(stderr, "rank %d: ncclCommAbort -> %d\n", g_rank, (int)r);
  return NULL;
}

/* Both ranks wait for a message no one sends; an abort from another thread must end the wait with an error. */
static int runAbort(int rank, int n, ncclUniqueId id) {
  ncclComm_t comm = NULL;
  NCCL_OK(ncclCommInitRank(&comm, n, id, rank));
  pthread_t thread;
  pthread_create(&thread, NULL, abortLater, comm);
  float x[64];
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ncclResult_t r = ncclRecv(x, 64, ncclFloat32, (rank + 1) % n, comm, NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  pthread_join(thread, NULL);
  double seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  CHECK(r != ncclSuccess, "the aborted receive succeeded");
  CHECK(seconds < 20, "the aborted receive took %.1f s", seconds);
  fprintf(stderr, "rank %d: aborted receive -> %d after %.2f s: %s\n", rank, (int)r, seconds, ncclGetLastError(NULL));
  return g_failures == 0 ? 0 : 1;
}

/* A rank fails (its communicator is aborted, as a crash closes its connections). The survivors shrink it away with
 * NCCL_SHRINK_ABORT while the parent still carries their exchange; once a call has failed on the parent (it waited
 * for the dead rank), tern refuses the shrink, saying why. */
static int runShrinkDead(int rank, int n, ncclUniqueId id) {
  ncclComm_t comm = NULL;
  NCCL_OK(ncclCommInitRank(&comm, n, id, rank));
  int one = 1, total = 0;
  NCCL_OK(ncclAllReduce(&one, &total, 1, ncclInt32, ncclSum, comm, NULL));
  /* the dead rank leaves only once every survivor is done with the parent (their tokens have arrived) */
  int dead = n - 1, token = 0;
  if (rank == dead) {
    for (int r = 0; r < dead; ++r) NCCL_OK(ncclRecv(&token, 1, ncclInt32, r, comm, NULL));
    NCCL_OK(ncclCommAbort(comm));
    return 0;
  }
  NCCL_OK(ncclSend(&token, 1, ncclInt32, dead, comm, NULL));
  struct timespec wait = {0, 300 * 1000 * 1000};
  nanosleep(&wait, NULL);
  int members[8];
  for (int i = 0; i < n - 1; ++i) members[i] = i;
  ncclComm_t sub = NULL;
  NCCL_OK(ncclCommShrink(comm, &dead, 1, &sub, NULL, NCCL_SHRINK_ABORT));
  checkSumOver(sub, members, n - 1, rank, "shrink without the dead rank");
  NCCL_OK(ncclCommDestroy(sub));
  ncclResult_t r = ncclAllReduce(&one, &total, 1, ncclInt32, ncclSum, comm, NULL);
  CHECK(r != ncclSuccess, "an allreduce with a dead rank succeeded");
  ncclComm_t none = (ncclComm_t)0x1;
  expectError(ncclCommShrink(comm, &dead, 1, &none, NULL, NCCL_SHRINK_ABORT), ncclInvalidUsage, "has failed",
              "shrink of a failed parent");
  CHECK(none == NULL, "a refused shrink left *newcomm set");
  NCCL_OK(ncclCommAbort(comm));
  return g_failures == 0 ? 0 : 1;
}

/* TERN_COMPRESS reaches ncclAllReduce as it does ternAllReduce: 1 + 2^-10 has no bf16 form (8 significant bits),
 * so a bf16-compressed sum of two ranks is 2, the exact one 2 + 2^-9. */
static const char* g_expectCompress = "exact";
static int runCompress(int rank, int n, ncclUniqueId id) {
  ncclComm_t comm = NULL;
  NCCL_OK(ncclCommInitRank(&comm, n, id, rank));
  const size_t count = 1 << 16; /* above TERN_COMPRESS_MIN_BYTES' default */
  float* x = calloc(count, sizeof(float));
  for (size_t i = 0; i < count; ++i) x[i] = 1.0f + 1.0f / 1024;
  NCCL_OK(ncclAllReduce(x, x, count, ncclFloat32, ncclSum, comm, NULL));
  float want = strcmp(g_expectCompress, "compressed") == 0 ? 2.0f * n / 2 : n * (1.0f + 1.0f / 1024);
  for (size_t i = 0; i < count; ++i) {
    if (x[i] != want) {
      CHECK(0, "%s allreduce [%zu]: %.9g, expected %.9g", g_expectCompress, i, x[i], want);
      break;
    }
  }
  NCCL_OK(ncclCommDestroy(comm));
  free(x);
  return g_failures == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  setvbuf(stderr, NULL, _IOLBF, 0);
  if (argc >= 3 && strcmp(argv[1], "ranks") == 0) return forkRanks(atoi(argv[2]), runRank, 240);
  if (argc >= 3 && strcmp(argv[1], "initall") == 0) return runInitAll(atoi(argv[2]));
  if (argc >= 3 && strcmp(argv[1], "groupinit") == 0) return runGroupInit(atoi(argv[2]));
  if (argc >= 2 && strcmp(argv[1], "groupinit-timeout") == 0) return runGroupInitTimeout();
  if (argc >= 2 && strcmp(argv[1], "abort") == 0) return forkRanks(2, runAbort, 60);
  if (argc >= 3 && strcmp(argv[1], "shrink-dead") == 0) return forkRanks(atoi(argv[2]), runShrinkDead, 60);
  if (argc >= 3 && strcmp(argv[1], "compress") == 0) {
    g_expectCompress = argv[2];
    return forkRanks(2, runCompress, 120);
  }
  fprintf(stderr,
          "usage: %s ranks N | initall N | groupinit N | groupinit-timeout | abort | shrink-dead N | compress "
          "exact|compressed\n",
          argv[0]);
  return 2;
}
