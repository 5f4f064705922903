/*
 * tern — topology-aware collective communication with built-in gradient compression.
 *
 * This is the public C API. Every function returns a ternResult_t; on failure, ternGetLastError() returns a
 * human-readable message saying what failed and where (rank, peer, operation). Result, datatype and reduction
 * values match NCCL's ABI so that the NCCL-compatible shim can pass them through unchanged.
 *
 * Threading: a communicator may be used from one thread at a time for issuing operations; ternCommAbort may be
 * called from any thread at any time. Operations on one communicator complete in issue order.
 */
#ifndef TERN_TERN_H_
#define TERN_TERN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TERN_MAJOR 0
#define TERN_MINOR 1
#define TERN_PATCH 0
/** Version as a single integer: major*10000 + minor*100 + patch (the NCCL >= 2.9 encoding). */
#define TERN_VERSION(X, Y, Z) ((X)*10000 + (Y)*100 + (Z))
#define TERN_VERSION_CODE TERN_VERSION(TERN_MAJOR, TERN_MINOR, TERN_PATCH)

/** Result codes; values and meanings are those of ncclResult_t. */
typedef enum {
  ternSuccess = 0,            /**< The call succeeded. */
  ternUnhandledCudaError = 1, /**< A CUDA call failed. */
  ternSystemError = 2,        /**< A system call failed (socket, mmap, ...). */
  ternInternalError = 3,      /**< A bug in tern. */
  ternInvalidArgument = 4,    /**< A bad argument (null buffer, bad dtype/op/root/peer, size overflow). */
  ternInvalidUsage = 5,       /**< A bad call sequence (e.g. use after abort, unmatched group). */
  ternRemoteError = 6,        /**< A peer failed, closed its connection or aborted. */
  ternInProgress = 7,         /**< An asynchronous operation has not completed yet. */
  ternTimeout = 8,            /**< A wait exceeded TERN_TIMEOUT. */
  ternNumResults = 9
} ternResult_t;

/** Element types; values are those of ncclDataType_t. */
typedef enum {
  ternInt8 = 0,
  ternChar = 0,
  ternUint8 = 1,
  ternInt32 = 2,
  ternInt = 2,
  ternUint32 = 3,
  ternInt64 = 4,
  ternUint64 = 5,
  ternFloat16 = 6,
  ternHalf = 6,
  ternFloat32 = 7,
  ternFloat = 7,
  ternFloat64 = 8,
  ternDouble = 8,
  ternBfloat16 = 9,
  ternNumTypes = 10
} ternDataType_t;

/** Reduction operations; values are those of ncclRedOp_t. Avg is a sum followed by a division by the rank count
 * (integer division for integer types). fp16/bf16 accumulate in fp32 and round to nearest even. */
typedef enum { ternSum = 0, ternProd = 1, ternMax = 2, ternMin = 3, ternAvg = 4, ternNumOps = 5 } ternRedOp_t;

/** Opaque communicator handle. */
typedef struct ternComm* ternComm_t;
/** Opaque handle of an asynchronous operation; completed (and released) by ternWait or a ternTest that reports
 * completion. */
typedef struct ternRequest* ternRequest_t;

#define TERN_UNIQUE_ID_BYTES 128
/** Identifies a communicator being created: the root's address and a random 128-bit secret that every connection
 * must present. Obtain it on one rank with ternGetUniqueId and distribute it to all ranks (any out-of-band way). */
typedef struct {
  char internal[TERN_UNIQUE_ID_BYTES];
} ternUniqueId;

#define TERN_CONFIG_MAGIC 0x7465726eu /* "tern" */
#define TERN_CONFIG_UNDEF_INT (-2147483647 - 1)
#define TERN_CONFIG_UNDEF_PTR NULL

/** Communicator options. Always start from TERN_CONFIG_INITIALIZER; fields left undefined take their value from the
 * environment (TERN_*) or the built-in default. The size/magic/version header lets the library accept configs
 * from older headers. */
typedef struct {
  size_t size;          /**< sizeof(ternConfig_t), set by the initializer. */
  unsigned int magic;   /**< TERN_CONFIG_MAGIC, set by the initializer. */
  unsigned int version; /**< TERN_VERSION_CODE of the header compiled against. */
  int blocking;         /**< Reserved for NCCL compatibility: tern's init is always blocking. */
  int timeoutMs;        /**< Timeout of every wait in ms (default TERN_TIMEOUT seconds, 300 s). */
  int nSocketsPerPeer;  /**< TCP sockets per peer (default TERN_NSOCKS, 2). */
  const char* algo;     /**< Algorithm selection, TERN_ALGO syntax. */
  const char* commName; /**< Name shown in log lines. */
  /** Codec that this communicator's sum and average allreduces may compress with where the model finds it pays,
   * TERN_COMPRESS syntax ("bf16", "sign", "topk:0.01", ...); "" for none. Replaces TERN_COMPRESS for this
   * communicator (and the communicators split from it); TERN_COMPRESS_WHEN and TERN_COMPRESS_MIN_BYTES still apply.
   * A codec that does not parse fails init with ternInvalidArgument. */
  const char* compress;
} ternConfig_t;

#define TERN_CONFIG_INITIALIZER                                                                               \
  {                                                                                                           \
    sizeof(ternConfig_t), TERN_CONFIG_MAGIC, TERN_VERSION_CODE, TERN_CONFIG_UNDEF_INT, TERN_CONFIG_UNDEF_INT, \
        TERN_CONFIG_UNDEF_INT, TERN_CONFIG_UNDEF_PTR, TERN_CONFIG_UNDEF_PTR, TERN_CONFIG_UNDEF_PTR            \
  }

/* ---------------------------------------------------------------------------------------------------------------
 * Library information and errors
 * ------------------------------------------------------------------------------------------------------------- */

/** Writes TERN_VERSION_CODE of the loaded library into *version. */
ternResult_t ternGetVersion(int* version);
/** Returns a static string naming a result code. */
const char* ternGetErrorString(ternResult_t result);
/** Returns the message of the last error raised on the calling thread (or by comm, if comm is not NULL and the
 * error happened asynchronously). Never NULL; empty when there was none. */
const char* ternGetLastError(ternComm_t comm);
/** Reports the communicator's asynchronous error state: ternSuccess, ternInProgress while an async operation is
 * running, or the error that put the communicator in the failed state. */
ternResult_t ternCommGetAsyncError(ternComm_t comm, ternResult_t* asyncError);

/* ---------------------------------------------------------------------------------------------------------------
 * Communicator creation and destruction
 * ------------------------------------------------------------------------------------------------------------- */

/** Creates a unique id whose root is the calling process: it starts a bootstrap listener (on the interface chosen
 * by TERN_SOCKET_IFNAME) that serves until every rank of the communicator has joined or TERN_TIMEOUT passes. */
ternResult_t ternGetUniqueId(ternUniqueId* uniqueId);
/** Creates the rank-th member of an nranks communicator identified by commId. Collective: blocks until every rank
 * has joined and all peer connections are established. */
ternResult_t ternCommInitRank(ternComm_t* comm, int nranks, ternUniqueId commId, int rank);
/** As ternCommInitRank, with options (config may be NULL for defaults). */
ternResult_t ternCommInitRankConfig(ternComm_t* comm, int nranks, ternUniqueId commId, int rank, ternConfig_t* config);
/** Creates a communicator from a launcher's environment: TERN_RANK/TERN_WORLD_SIZE/TERN_ROOT_ADDR (tern-run),
 * torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), Open MPI (OMPI_COMM_WORLD_RANK/SIZE) or Slurm/PMI
 * (SLURM_PROCID/SLURM_NTASKS, PMI_RANK/PMI_SIZE). With Open MPI and Slurm, the root address comes from
 * TERN_ROOT_ADDR or MASTER_ADDR/MASTER_PORT. config may be NULL. */
ternResult_t ternCommInitFromEnv(ternComm_t* comm, ternConfig_t* config);
/** Splits comm: ranks passing the same color form a new communicator, ordered by key (then by old rank). A rank
 * passing a negative color gets *newcomm = NULL. Collective over comm. */
ternResult_t ternCommSplit(ternComm_t comm, int color, int key, ternComm_t* newcomm, ternConfig_t* config);
/** Waits for outstanding operations, closes connections and frees the communicator. */
ternResult_t ternCommDestroy(ternComm_t comm);
/** Aborts the communicator: every wait on it (in any thread) returns an error within a second, peers see the
 * connection close and fail too; then frees it. Safe to call from another thread while an operation runs. */
ternResult_t ternCommAbort(ternComm_t comm);
/** Number of ranks. */
ternResult_t ternCommCount(const ternComm_t comm, int* count);
/** This process's rank. */
ternResult_t ternCommUserRank(const ternComm_t comm, int* rank);

/* ---------------------------------------------------------------------------------------------------------------
 * Memory
 * ------------------------------------------------------------------------------------------------------------- */

/** Allocates size bytes of shared-memory-backed host memory (like ncclMemAlloc). Collectives whose buffers come
 * from here let same-host peers read them in place, skipping the copy into the shared staging area (an all-to-all
 * whose inputs all come from here moves each block once, out of the sender's buffer). Usable as ordinary memory
 * everywhere. */
ternResult_t ternMemAlloc(void** ptr, size_t size);
/** Frees memory from ternMemAlloc. */
ternResult_t ternMemFree(void* ptr);

/* ---------------------------------------------------------------------------------------------------------------
 * Collectives. Buffers are host memory. count is in elements. In-place is sendbuff == recvbuff (for AllGather:
 * sendbuff == recvbuff + rank*count; for ReduceScatter: sendbuff + rank*recvcount == recvbuff, NCCL's form, also
 * counts; recvbuff == sendbuff, MPI_IN_PLACE's layout, costs a copy of the result through private scratch).
 * Every collective has an Async form that returns immediately with a request; complete it with ternWait/ternTest.
 * The buffers must stay valid and untouched until then.
 * ------------------------------------------------------------------------------------------------------------- */

/** recvbuff[i] = op over ranks of sendbuff[i], identical bits on every rank. */
ternResult_t ternAllReduce(const void* sendbuff, void* recvbuff, size_t count, ternDataType_t datatype, ternRedOp_t op,
                           ternComm_t comm);
/** recvbuff[r*sendcount + i] = sendbuff of rank r [i]. */
ternResult_t ternAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ternDataType_t datatype,
                           ternComm_t comm);
/** recvbuff[i] = op over ranks of sendbuff[rank*recvcount + i]. */
ternResult_t ternReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ternDataType_t datatype,
                               ternRedOp_t op, ternComm_t comm);
/** recvbuff = sendbuff of root (sendbuff is only read on root). */
ternResult_t ternBroadcast(const void* sendbuff, void* recvbuff, size_t count, ternDataType_t datatype, int root,
                           ternComm_t comm);
/** On root: recvbuff[i] = op over ranks of sendbuff[i]; recvbuff is ignored elsewhere. */
ternResult_t ternReduce(const void* sendbuff, void* recvbuff, size_t count, ternDataType_t datatype, ternRedOp_t op,
                        int root, ternComm_t comm);
/** recvbuff[r*count + i] = sendbuff of rank r [rank*count + i]. count is per peer. */
ternResult_t ternAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ternDataType_t datatype, ternComm_t comm);
/** Vector all-to-all: rank sends sendcounts[r] elements starting at sdispls[r] to rank r, and receives
 * recvcounts[r] elements from rank r at rdispls[r] (counts and displacements in elements). */
ternResult_t ternAlltoAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[], void* recvbuff,
                           const size_t recvcounts[], const size_t rdispls[], ternDataType_t datatype, ternComm_t comm);
/** Point-to-point send to peer. Between ternGroupStart and ternGroupEnd, sends and receives are only recorded and
 * run together at ternGroupEnd, so a rank may send to and receive from the same peer without deadlock. */
ternResult_t ternSend(const void* sendbuff, size_t count, ternDataType_t datatype, int peer, ternComm_t comm);
/** Point-to-point receive from peer (see ternSend). */
ternResult_t ternRecv(void* recvbuff, size_t count, ternDataType_t datatype, int peer, ternComm_t comm);
/** Returns when every rank has entered the barrier. */
ternResult_t ternBarrier(ternComm_t comm);

/** Starts a group of point-to-point operations (groups nest; the outermost End runs them). */
ternResult_t ternGroupStart(void);
/** Runs the point-to-point operations recorded since the matching ternGroupStart, per communicator. */
ternResult_t ternGroupEnd(void);

/* Asynchronous forms: same arguments plus *request, which receives a handle to wait on. */
ternResult_t ternAllReduceAsync(const void* sendbuff, void* recvbuff, size_t count, ternDataType_t datatype,
                                ternRedOp_t op, ternComm_t comm, ternRequest_t* request);
ternResult_t ternAllGatherAsync(const void* sendbuff, void* recvbuff, size_t sendcount, ternDataType_t datatype,
                                ternComm_t comm, ternRequest_t* request);
ternResult_t ternReduceScatterAsync(const void* sendbuff, void* recvbuff, size_t recvcount, ternDataType_t datatype,
                                    ternRedOp_t op, ternComm_t comm, ternRequest_t* request);
ternResult_t ternBroadcastAsync(const void* sendbuff, void* recvbuff, size_t count, ternDataType_t datatype, int root,
                                ternComm_t comm, ternRequest_t* request);
ternResult_t ternReduceAsync(const void* sendbuff, void* recvbuff, size_t count, ternDataType_t datatype,
                             ternRedOp_t op, int root, ternComm_t comm, ternRequest_t* request);
ternResult_t ternAlltoAllAsync(const void* sendbuff, void* recvbuff, size_t count, ternDataType_t datatype,
                               ternComm_t comm, ternRequest_t* request);
ternResult_t ternAlltoAllvAsync(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[], void* recvbuff,
                                const size_t recvcounts[], const size_t rdispls[], ternDataType_t datatype,
                                ternComm_t comm, ternRequest_t* request);
ternResult_t ternSendAsync(const void* sendbuff, size_t count, ternDataType_t datatype, int peer, ternComm_t comm,
                           ternRequest_t* request);
ternResult_t ternRecvAsync(void* recvbuff, size_t count, ternDataType_t datatype, int peer, ternComm_t comm,
                           ternRequest_t* request);
ternResult_t ternBarrierAsync(ternComm_t comm, ternRequest_t* request);

/* ---------------------------------------------------------------------------------------------------------------
 * Compressed collectives. A compressor owns a codec and the error-feedback state of one tensor (what compression
 * has not yet delivered is added to the next call's input, which is what makes 1-bit and Top-K compression
 * converge like uncompressed SGD). Results are lossy but identical on every rank.
 * ------------------------------------------------------------------------------------------------------------- */

/** Opaque compressor handle. */
typedef struct ternCompressor* ternCompressor_t;

/** Creates a compressor for a tensor of count elements of dtype (float32, float16 or bfloat16).
 * method: "sign" (1 bit per element + a scale per chunk; params "rms" for DeepSpeed's RMS scale), "qsgd" (params
 * "BITS[:BUCKET]", bits 2/4/8, default "4:512"), "topk" (params "RATIO[:exact|:sampled][:fp16]", default
 * "0.01:sampled"), "fp16", "bf16". params may be NULL. The whole spec may also be given as method ("qsgd:8").
 * For ternReduceScatterCompressed, count is the whole input (recvcount x ranks); for ternAllGatherCompressed, the
 * per-rank block. */
ternResult_t ternCompressorCreate(const char* method, const char* params, size_t count, ternDataType_t dtype,
                                  ternCompressor_t* compressor);
/** Frees a compressor (after the operations using it completed). */
ternResult_t ternCompressorDestroy(ternCompressor_t compressor);
/** Zeroes the error-feedback state. */
ternResult_t ternCompressorReset(ternCompressor_t compressor);
/** Sets the seed of stochastic rounding (QSGD) and sampling (Top-K); every rank must use the same seed. */
ternResult_t ternCompressorSetSeed(ternCompressor_t compressor, uint64_t seed);
/** Checkpoints the error-feedback state: with buffer NULL, writes the size needed to *bytes; else writes at most
 * *bytes bytes and sets *bytes to the size written. */
ternResult_t ternCompressorSave(ternCompressor_t compressor, void* buffer, size_t* bytes);
/** Restores a checkpoint written by ternCompressorSave. */
ternResult_t ternCompressorLoad(ternCompressor_t compressor, const void* buffer, size_t bytes);

/** Compressed allreduce (op ternSum or ternAvg): two-phase (all-to-all of compressed chunks, reduce, re-compress,
 * all-gather) for dense codecs, sparse all-gather for Top-K. */
ternResult_t ternAllReduceCompressed(const void* sendbuff, void* recvbuff, size_t count, ternDataType_t datatype,
                                     ternRedOp_t op, ternCompressor_t compressor, ternComm_t comm);
/** Compressed all-gather: every rank's block is compressed once and decoded by everyone. */
ternResult_t ternAllGatherCompressed(const void* sendbuff, void* recvbuff, size_t sendcount, ternDataType_t datatype,
                                     ternCompressor_t compressor, ternComm_t comm);
/** Compressed reduce-scatter (op ternSum or ternAvg). */
ternResult_t ternReduceScatterCompressed(const void* sendbuff, void* recvbuff, size_t recvcount,
                                         ternDataType_t datatype, ternRedOp_t op, ternCompressor_t compressor,
                                         ternComm_t comm);
ternResult_t ternAllReduceCompressedAsync(const void* sendbuff, void* recvbuff, size_t count, ternDataType_t datatype,
                                          ternRedOp_t op, ternCompressor_t compressor, ternComm_t comm,
                                          ternRequest_t* request);
ternResult_t ternAllGatherCompressedAsync(const void* sendbuff, void* recvbuff, size_t sendcount,
                                          ternDataType_t datatype, ternCompressor_t compressor, ternComm_t comm,
                                          ternRequest_t* request);
ternResult_t ternReduceScatterCompressedAsync(const void* sendbuff, void* recvbuff, size_t recvcount,
                                              ternDataType_t datatype, ternRedOp_t op, ternCompressor_t compressor,
                                              ternComm_t comm, ternRequest_t* request);

/** Blocks until the request completes (or fails, or times out), then releases it. */
ternResult_t ternWait(ternRequest_t request);
/** Sets *done to 1 and releases the request if it has completed (returning its result), else sets *done to 0 and
 * returns ternSuccess. */
ternResult_t ternTest(ternRequest_t request, int* done);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TERN_TERN_H_
