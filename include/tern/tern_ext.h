/*
 * tern extensions beyond the NCCL-shaped core API: introspection used by tools (perf binaries, tern-calc) and by
 * users who want to know what the library will do.
 */
#ifndef TERN_TERN_EXT_H_
#define TERN_TERN_EXT_H_

#include "tern/tern.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Names the algorithm tern would run for a collective ("allreduce", "allgather", "reducescatter", "broadcast",
 * "reduce", "alltoall", "barrier") of count elements (per-rank count as in the collective's own call) on comm, and
 * the cost model's predicted time in microseconds (0 when the model has no estimate). name receives at most
 * nameLen bytes including the terminating NUL. */
ternResult_t ternQueryAlgorithm(ternComm_t comm, const char* collective, size_t count, ternDataType_t datatype,
                                char* name, size_t nameLen, double* predictedUs);

/** As ternQueryAlgorithm, for the compressed form of a collective ("allreduce", "allgather", "reducescatter") with
 * the codec spec of ternCompressorCreate's method and params joined by ':' ("sign", "qsgd:4", "topk:0.01"): the
 * compressed algorithm's name and the cost model's predicted time, codec work included. */
ternResult_t ternQueryCompressedAlgorithm(ternComm_t comm, const char* collective, size_t count,
                                          ternDataType_t datatype, const char* codec, char* name, size_t nameLen,
                                          double* predictedUs);

/** Names the algorithm that ran the last collective comm completed on this rank, as ternQueryAlgorithm names them
 * ("ring", "rd", "shm_cma", ...; a compressed call's algorithm is followed by its codec spec in parentheses, as in
 * "compressed_hier (bf16)"; "self" for a one-rank communicator; "p2p" for a group of sends and receives), or ""
 * before the first. Useful when a choice depends on what the communicator has learned at run time
 * (TERN_COMPRESS, the network model): it says what actually ran, where ternQueryAlgorithm says what would run now.
 * name receives at most nameLen bytes including the terminating NUL. */
ternResult_t ternCommLastAlgorithm(ternComm_t comm, char* name, size_t nameLen);

/** Converts count values between the floating-point types (ternFloat16, ternBfloat16, ternFloat32, ternFloat64)
 * with the library's own rounding (to nearest even; NaN stays NaN), so that values converted by a caller and by a
 * collective agree bit for bit. src and dst must not overlap unless they are the same buffer of the same type.
 * ternInvalidArgument for another type or a NULL buffer with count > 0. */
ternResult_t ternConvert(const void* src, ternDataType_t srcType, void* dst, ternDataType_t dstType, size_t count);

/** Reads a numeric TERN_* knob ("TERN_BUCKET_MB") through the library's knobs table, so that tools and companion
 * libraries check it exactly as an init does: *value receives its value, or fallback when it is unset.
 * ternInvalidArgument for a NULL argument or a name the table does not declare as numeric; ternInvalidUsage for a
 * bad value (out of range, not a number), with a message naming the variable, the value and the range. */
ternResult_t ternGetKnobNumber(const char* name, double fallback, double* value);

/** Number of hosts comm's ranks span, as the library groups ranks into nodes (TERN_HOSTID where set, else the
 * host's own identity): what the cost model and the hierarchical algorithms take as the node count.
 * ternInvalidArgument for a NULL hosts or an invalid comm. */
ternResult_t ternCommHostCount(ternComm_t comm, int* hosts);

/** Name of the transport comm runs on ("tcp", "inproc", "shm", ...). */
const char* ternCommTransportName(ternComm_t comm);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TERN_TERN_EXT_H_
