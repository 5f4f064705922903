// Compressed allreduce on device buffers with the codecs on the device (compress/device_codecs.hpp): only payloads
// (and, in the hierarchical form, the slices that stay inside a node) leave the GPU. The same layout and steps as the
// host schedules of algorithms/compressed.hpp, so the same bits for the same inputs, seed and step:
//  - dense codecs, the two-phase allreduce in pieces: per piece, encode every chunk (worker error feedback) on the
//    stream -> exchange the payloads (an all-to-all) -> decode and sum this rank's chunk in rank order, divide for
//    avg, re-encode the sum (server error feedback) -> exchange (an all-gather) -> decode every chunk (and cast to a
//    16-bit output);
//  - Top-K, the sparse all-gather: encode the whole tensor -> all-gather the payloads -> decode and sum them in rank
//    order (divide for avg, cast).
// The exchanges are point-to-point batches on the stream: NCCL's where NCCL runs the communicator's device calls
// (nccl_device_engine.hpp), else the staged path's (staged_device_calls.hpp), queued on the communicator in call order
// like every other call. Error feedback lives in device memory,
// one worker and one server residual per compressor (the communicator's implicit compressors, TERN_COMPRESS), zeroed
// on the stream at first use; per-call scratch is device memory given back once the stream has passed the call.
//  - the hierarchical form (compressed_hier) where the communicator chooses it: per piece, each node's slices summed
//    uncompressed inside the node (device additions in local-rank order), the two-phase exchange of each slice among
//    one rank per node, the decoded slices gathered inside the node.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "compress/device_codecs.hpp"
#include "core/compressor.hpp"
#include "core/device_streams.hpp"
#include "exec/operation.hpp"

namespace tern {

class Communicator;
class NcclDeviceEngine;
class StagedDeviceCalls;

class DeviceCompressedCalls {
 public:
  DeviceCompressedCalls(DeviceStreams& streams, compress::DeviceCodecs& codecs);
  ~DeviceCompressedCalls();
  DeviceCompressedCalls(const DeviceCompressedCalls&) = delete;
  DeviceCompressedCalls& operator=(const DeviceCompressedCalls&) = delete;

  // Enqueues op (an allreduce, sum or avg, of fp32/fp16/bf16 device buffers) compressed with c on stream; the
  // exchanges go through NCCL when it runs the communicator's device calls (nccl not null), else through staged.
  // hostOf (the communicator's host index per rank), when given, asks for the hierarchical form (fp32, dense codecs,
  // even nodes: compressedHierApplies). Returns the algorithm's name ("compressed_2phase", "compressed_hier",
  // "sparse_allgather").
  const char* allReduce(Communicator& comm, StagedDeviceCalls& staged, NcclDeviceEngine* nccl, const Operation& op,
                        Compressor& c, const std::vector<int>* hostOf, void* stream);

  struct Feedback {
    float* worker = nullptr;
    float* server = nullptr;
  };
  // What every step of one call needs.
  struct Call {
    Communicator& comm;
    StagedDeviceCalls& staged;
    NcclDeviceEngine* nccl;
    void* stream;
    const Compressor& compressor;
    const Feedback& feedback;
    uint64_t step;
    bool average;
    char* scratch;  // the call's device scratch
  };

 private:
  struct TwoPhaseLayout;  // where one two-phase piece's buffers lie in the call's scratch
  // Device memory freed once its stream has passed `marker`.
  struct Retired {
    void* memory;
    uintptr_t marker;
  };

  Feedback& feedbackFor(const Compressor& c, void* stream);
  // One piece of the two-phase exchange among group (this rank at position me): the tensor's elements [base, base +
  // count) (global offsets: they index the error feedback and key the codecs' random numbers), read from src (of
  // srcType), their fp32 result written to dst; its buffers at `at` in the call's scratch.
  void twoPhasePiece(const Call& call, const TwoPhaseLayout& at, const std::vector<int>& group, int me, size_t base,
                     size_t count, const void* src, ternDataType_t srcType, float* dst);
  void retire(void* memory, void* stream) noexcept;
  void reclaim(bool wait);

  DeviceStreams& streams_;
  compress::DeviceCodecs& codecs_;
  std::mutex mutex_;  // calls from several threads (one per stream) share the state below
  std::map<const Compressor*, Feedback> feedback_;
  std::vector<Retired> retired_;
};

}  // namespace tern
