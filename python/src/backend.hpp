// The tern backend of torch.distributed: a c10d::Backend whose collectives run tern's C API on one tern
// communicator per process group, created through the c10d Store that torch hands every backend (rank 0 of the
// group publishes a tern unique id, the others read it), so torchrun, env://, tcp://, file:// and new_group work
// as with Gloo.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <tuple>
#include <vector>

#include "tern/tern.h"
#include "tern/tern_ext.h"
#include "work.hpp"

namespace tern::torch_backend {

class Backend final : public c10d::Backend {
 public:
  // store: the group's store (torch prefixes it per group); timeout: the group's timeout, which becomes tern's
  // timeout for every wait unless TERN_TIMEOUT is set in the environment; compress: the codec the group's sum and
  // average allreduces may compress with (ternConfig_t.compress; "" leaves TERN_COMPRESS in charge).
  Backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout,
          const std::string& groupName, const std::string& compress = "");
  ~Backend() override;

  const std::string getBackendName() const override { return "tern"; }
  bool supportsCoalescing() const override { return true; }
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputLists,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplitSizes,
                                               std::vector<int64_t>& inputSplitSizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // Compressed allreduce of a float32/float16/bfloat16 tensor in place (sum, or average when `average`), with the
  // error-feedback state of `key` (e.g. a DDP bucket's index) kept in a tern compressor between calls. A key whose
  // size or dtype changes (DDP rebuilds its buckets after the first step) starts over with a zero state.
  c10::intrusive_ptr<c10d::Work> allreduceCompressed(at::Tensor& tensor, const std::string& codec, int64_t key,
                                                     bool average);

  void abort() override;
  void shutdown() override;

 private:
  using Body = std::function<void()>;
  // inputs: only to tell a call on device tensors whose outputs are empty on this rank (gather off the root).
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, const char* title, std::vector<at::Tensor> outputs,
                                         Body body, const std::vector<at::Tensor>& inputs = {});
  c10::intrusive_ptr<c10d::Work> pointToPoint(bool isSend, at::Tensor tensor, int peer, const char* title);
  // Host works go to the worker thread; works on device tensors run at once on the caller's thread, enqueuing their
  // tern calls on the caller's current stream (stream_calls.hpp).
  void submit(const c10::intrusive_ptr<Work>& work, const std::optional<c10::Device>& device);
  // The device of the first non-CPU tensor (nullopt: a host call).
  static std::optional<c10::Device> deviceOf(const std::vector<at::Tensor>& tensors);
  static std::vector<c10::Device> devicesOf(const std::optional<c10::Device>& device);
  // Throws a DistBackendError naming the collective, this rank and tern's message when r is not success.
  void check(ternResult_t r, const char* collective) const;
  void checkRank(int64_t peer, const char* collective, const char* what) const;
  ternComm_t comm() const;

  ternComm_t comm_ = nullptr;
  std::atomic<bool> aborted_{false};
  WorkQueue queue_;

  // Point-to-point calls recorded between startCoalescing and endCoalescing, run as one tern group.
  struct PendingPeerOp {
    bool isSend;
    at::Tensor tensor;
    int peer;
    c10::intrusive_ptr<Work> work;
  };
  bool coalescing_ = false;
  std::vector<PendingPeerOp> coalesced_;

  struct CompressorKey {
    int64_t key;
    int64_t elements;
    at::ScalarType type;
    std::string codec;
    auto operator<=>(const CompressorKey&) const = default;
  };
  // Touched only by the worker thread (the bodies of compressed allreduces).
  std::map<int64_t, std::pair<CompressorKey, ternCompressor_t>> compressors_;
};

}  // namespace tern::torch_backend
