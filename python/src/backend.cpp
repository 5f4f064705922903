#include "backend.hpp"

#include <c10/util/Exception.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "stream_calls.hpp"
#include "tensor_args.hpp"

namespace tern::torch_backend {
namespace {

// The key under which the group's rank 0 publishes the tern unique id. torch hands every process group a store
// prefixed with the group's name, so one key per group suffices.
constexpr const char* kUniqueIdKey = "tern/unique_id";

// Copies a flat run of elements (as a Buffer of `user` holds them) into the caller's tensor `user`.
void copyFlatInto(const at::Tensor& user, const at::Tensor& flat, const char* collective) {
  Buffer b = asBuffer(user, collective);
  b.data.view(-1).copy_(flat);
  b.writeBack();
}

// The contiguous elements of every tensor of `tensors`, one after another, as tern reads them.
at::Tensor concatenated(const std::vector<at::Tensor>& tensors, const char* collective) {
  std::vector<at::Tensor> flat;
  flat.reserve(tensors.size());
  for (const auto& t : tensors) flat.push_back(asBuffer(t, collective).data.view(-1));
  return at::cat(flat);
}

}  // namespace

Backend::Backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout,
                 const std::string& groupName, const std::string& compress)
    : c10d::Backend(rank, size) {
  TORCH_CHECK(store, "tern: no store to bootstrap through");
  TORCH_CHECK(size >= 1 && rank >= 0 && rank < size, "tern: rank ", rank, " is outside a group of size ", size);
  ternUniqueId id;
  if (rank == 0) {
    check(ternGetUniqueId(&id), "unique id");
    const auto* p = reinterpret_cast<const uint8_t*>(&id);
    store->set(kUniqueIdKey, std::vector<uint8_t>(p, p + sizeof(id)));
  } else {
    std::vector<uint8_t> bytes = store->get(kUniqueIdKey);
    TORCH_CHECK(bytes.size() == sizeof(id), "tern: the store holds a unique id of ", bytes.size(), " bytes under '",
                kUniqueIdKey, "', expected ", sizeof(id),
                " (another backend wrote that key, or the store is shared by two jobs)");
    std::memcpy(&id, bytes.data(), sizeof(id));
  }
  ternConfig_t config = TERN_CONFIG_INITIALIZER;
  // TERN_TIMEOUT, when the user set it, wins over torch's group timeout (tern's documented knob); read through the
  // library's knobs table, so that a bad value is refused here with the table's message.
  double ternTimeout = -1;
  check(ternGetKnobNumber("TERN_TIMEOUT", -1, &ternTimeout), "TERN_TIMEOUT");
  if (ternTimeout < 0 && timeout.count() > 0) {
    config.timeoutMs = static_cast<int>(std::min<int64_t>(timeout.count(), INT_MAX));
  }
  const std::string name = "torch:" + groupName;
  config.commName = name.c_str();
  if (!compress.empty()) config.compress = compress.c_str();
  check(ternCommInitRankConfig(&comm_, size, id, rank, &config), "init");
}

Backend::~Backend() {
  if (!aborted_) {
    try {
      shutdown();
    } catch (...) {  // a destructor must not throw; the failure was reported by the calls that met it
    }
  }
}

void Backend::check(ternResult_t r, const char* collective) const {
  if (r == ternSuccess) return;
  const std::string message = c10::str("tern ", collective, " failed on rank ", getRank(), " of ", getSize(), ": ",
                                       ternGetErrorString(r), ": ", ternGetLastError(comm_));
  C10_THROW_ERROR(DistBackendError, message);
}

void Backend::checkRank(int64_t peer, const char* collective, const char* what) const {
  TORCH_CHECK(peer >= 0 && peer < getSize(), "tern ", collective, ": ", what, " ", peer,
              " is outside the group of size ", getSize());
}

ternComm_t Backend::comm() const {
  if (aborted_ || comm_ == nullptr) {
    C10_THROW_ERROR(DistBackendError, c10::str("tern: the process group (rank ", getRank(), " of ", getSize(),
                                               ") has been aborted or shut down"));
  }
  return comm_;
}

c10::intrusive_ptr<c10d::Work> Backend::enqueue(c10d::OpType type, const char* title, std::vector<at::Tensor> outputs,
                                                Body body, const std::vector<at::Tensor>& inputs) {
  std::optional<c10::Device> device = deviceOf(outputs);
  if (!device) device = deviceOf(inputs);  // e.g. gather off the root: no outputs, device inputs
  auto work = c10::make_intrusive<Work>(getRank(), type, title, std::move(outputs), std::move(body), devicesOf(device));
  submit(work, device);
  return work;
}

std::optional<c10::Device> Backend::deviceOf(const std::vector<at::Tensor>& tensors) {
  for (const auto& t : tensors) {
    if (t.defined() && !t.device().is_cpu()) return t.device();
  }
  return std::nullopt;
}

std::vector<c10::Device> Backend::devicesOf(const std::optional<c10::Device>& device) {
  if (!device) return {};
  return {*device};
}

void Backend::submit(const c10::intrusive_ptr<Work>& work, const std::optional<c10::Device>& device) {
  if (!device) {
    queue_.push(work);
    return;
  }
  // Device tensors: the call is enqueued on the caller's current stream before this returns, as NCCL's are, so
  // that the caller's next kernels on that stream come after it. Host calls already queued go first (one order of
  // calls on every rank), so a device call waits for the group's pending host work before it is enqueued.
  queue_.drain();
  const StreamScope onStream(*device);
  work->run();
}

c10::intrusive_ptr<c10d::Work> Backend::broadcast(std::vector<at::Tensor>& tensors,
                                                  const c10d::BroadcastOptions& opts) {
  const at::Tensor& t = singleTensor(tensors, "broadcast");
  checkRank(opts.rootRank, "broadcast", "root");
  Buffer b = asBuffer(t, "broadcast");
  const int root = static_cast<int>(opts.rootRank);
  return enqueue(c10d::OpType::BROADCAST, "tern:broadcast", tensors, [this, b, root] {
    check(calls::broadcast(b.ptr(), b.ptr(), b.count, b.dtype, root, comm()), "broadcast");
    b.writeBack();
  });
}

c10::intrusive_ptr<c10d::Work> Backend::allreduce(std::vector<at::Tensor>& tensors,
                                                  const c10d::AllreduceOptions& opts) {
  const at::Tensor& t = singleTensor(tensors, "allreduce");
  Buffer b = asBuffer(t, "allreduce");
  Reduction red = reductionOf(opts.reduceOp, t.scalar_type(), "allreduce");
  return enqueue(c10d::OpType::ALLREDUCE, "tern:all_reduce", tensors, [this, b, red]() mutable {
    red.premultiply(b.data);
    check(calls::allReduce(b.ptr(), b.ptr(), b.count, b.dtype, red.op, comm()), "allreduce");
    b.writeBack();
  });
}

c10::intrusive_ptr<c10d::Work> Backend::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                            const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "tern allreduce_coalesced: no tensors");
  for (const auto& t : tensors) {
    TORCH_CHECK(t.scalar_type() == tensors[0].scalar_type(), "tern allreduce_coalesced: tensors of dtypes ",
                c10::toString(tensors[0].scalar_type()), " and ", c10::toString(t.scalar_type()),
                " cannot be reduced as one");
    (void)asBuffer(t, "allreduce_coalesced");  // checks device and dtype now, in the caller's thread
  }
  Reduction red = reductionOf(opts.reduceOp, tensors[0].scalar_type(), "allreduce_coalesced");
  const ternDataType_t dtype = ternTypeOf(tensors[0].scalar_type(), "allreduce_coalesced");
  return enqueue(c10d::OpType::ALLREDUCE_COALESCED, "tern:all_reduce_coalesced", tensors,
                 [this, tensors, red, dtype]() mutable {
                   at::Tensor flat = concatenated(tensors, "allreduce_coalesced");
                   red.premultiply(flat);
                   check(calls::allReduce(flat.data_ptr(), flat.data_ptr(), flat.numel(), dtype, red.op, comm()),
                         "allreduce_coalesced");
                   int64_t offset = 0;
                   for (const auto& t : tensors) {
                     const int64_t n = asBuffer(t, "allreduce_coalesced").data.numel();
                     copyFlatInto(t, flat.narrow(0, offset, n), "allreduce_coalesced");
                     offset += n;
                   }
                 });
}

c10::intrusive_ptr<c10d::Work> Backend::reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) {
  const at::Tensor& t = singleTensor(tensors, "reduce");
  checkRank(opts.rootRank, "reduce", "root");
  Buffer b = asBuffer(t, "reduce");
  Reduction red = reductionOf(opts.reduceOp, t.scalar_type(), "reduce");
  const int root = static_cast<int>(opts.rootRank);
  return enqueue(c10d::OpType::REDUCE, "tern:reduce", tensors, [this, b, red, root]() mutable {
    at::Tensor in = b.data;
    if (red.premultiplies()) {  // off the root the tensor stays as it was, PREMUL_SUM included
      in = in.clone();
      red.premultiply(in);
    }
    check(calls::reduce(in.data_ptr(), b.ptr(), b.count, b.dtype, red.op, root, comm()), "reduce");
    b.writeBack();
  });
}

c10::intrusive_ptr<c10d::Work> Backend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                  std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions&) {
  const at::Tensor& in = singleTensor(inputs, "allgather");
  TORCH_CHECK(outputs.size() == 1, "tern allgather: expects one output list, got ", outputs.size());
  TORCH_CHECK(static_cast<int>(outputs[0].size()) == getSize(), "tern allgather: the output list has ",
              outputs[0].size(), " tensors for a group of ", getSize());
  checkSameShape(outputs[0], in, "allgather", "output tensor");
  Buffer ib = asBuffer(in, "allgather");
  std::vector<at::Tensor> outs = outputs[0];
  return enqueue(c10d::OpType::ALLGATHER, "tern:all_gather", outs, [this, ib, outs] {
    at::Tensor flat = flatLike(ib.data, static_cast<int64_t>(ib.count) * getSize());
    check(calls::allGather(ib.ptr(), flat.data_ptr(), ib.count, ib.dtype, comm()), "allgather");
    const auto n = static_cast<int64_t>(ib.count);
    for (int r = 0; r < getSize(); ++r) copyFlatInto(outs[r], flat.narrow(0, r * n, n), "allgather");
  });
}

c10::intrusive_ptr<c10d::Work> Backend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                        const c10d::AllgatherOptions&) {
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "tern all_gather_into_tensor: output dtype ",
              c10::toString(output.scalar_type()), " differs from input dtype ", c10::toString(input.scalar_type()));
  TORCH_CHECK(output.numel() == input.numel() * getSize(), "tern all_gather_into_tensor: the output has ",
              output.numel(), " elements, expected ", input.numel() * getSize(), " (", getSize(), " ranks x ",
              input.numel(), ")");
  Buffer ib = asBuffer(input, "all_gather_into_tensor");
  Buffer ob = asBuffer(output, "all_gather_into_tensor");
  return enqueue(c10d::OpType::_ALLGATHER_BASE, "tern:all_gather_into_tensor", {output}, [this, ib, ob] {
    check(calls::allGather(ib.ptr(), ob.ptr(), ib.count, ib.dtype, comm()), "all_gather_into_tensor");
    ob.writeBack();
  });
}

c10::intrusive_ptr<c10d::Work> Backend::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputLists,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllgatherOptions&) {
  TORCH_CHECK(outputLists.size() == static_cast<size_t>(getSize()), "tern allgather_coalesced: ", outputLists.size(),
              " output lists for a group of ", getSize());
  for (const auto& list : outputLists) {
    TORCH_CHECK(list.size() == inputs.size(), "tern allgather_coalesced: an output list has ", list.size(),
                " tensors for ", inputs.size(), " inputs");
    for (size_t i = 0; i < inputs.size(); ++i) checkSameShape({list[i]}, inputs[i], "allgather_coalesced", "output");
  }
  std::vector<at::Tensor> flatOutputs;
  for (const auto& list : outputLists) flatOutputs.insert(flatOutputs.end(), list.begin(), list.end());
  return enqueue(
      c10d::OpType::ALLGATHER_COALESCED, "tern:all_gather_coalesced", flatOutputs, [this, outputLists, inputs] {
        for (size_t i = 0; i < inputs.size(); ++i) {
          Buffer ib = asBuffer(inputs[i], "allgather_coalesced");
          const auto n = static_cast<int64_t>(ib.count);
          at::Tensor flat = flatLike(ib.data, n * getSize());
          check(calls::allGather(ib.ptr(), flat.data_ptr(), ib.count, ib.dtype, comm()), "allgather_coalesced");
          for (int r = 0; r < getSize(); ++r) {
            copyFlatInto(outputLists[r][i], flat.narrow(0, r * n, n), "allgather_coalesced");
          }
        }
      });
}

c10::intrusive_ptr<c10d::Work> Backend::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                        std::vector<at::Tensor>& inputs,
                                                                        const c10d::AllgatherOptions&) {
  TORCH_CHECK(outputs.size() == inputs.size(), "tern allgather_into_tensor_coalesced: ", outputs.size(),
              " outputs for ", inputs.size(), " inputs");
  std::vector<Buffer> ins, outs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TORCH_CHECK(
        outputs[i].scalar_type() == inputs[i].scalar_type() && outputs[i].numel() == inputs[i].numel() * getSize(),
        "tern allgather_into_tensor_coalesced: output ", i, " has ", outputs[i].numel(), " elements of ",
        c10::toString(outputs[i].scalar_type()), ", expected ", inputs[i].numel() * getSize(), " of ",
        c10::toString(inputs[i].scalar_type()));
    ins.push_back(asBuffer(inputs[i], "allgather_into_tensor_coalesced"));
    outs.push_back(asBuffer(outputs[i], "allgather_into_tensor_coalesced"));
  }
  return enqueue(c10d::OpType::ALLGATHER_INTO_TENSOR_COALESCED, "tern:all_gather_into_tensor_coalesced", outputs,
                 [this, ins, outs] {
                   for (size_t i = 0; i < ins.size(); ++i) {
                     check(calls::allGather(ins[i].ptr(), outs[i].ptr(), ins[i].count, ins[i].dtype, comm()),
                           "allgather_into_tensor_coalesced");
                     outs[i].writeBack();
                   }
                 });
}

c10::intrusive_ptr<c10d::Work> Backend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                               std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) {
  const at::Tensor& in = singleTensor(inputs, "gather");
  checkRank(opts.rootRank, "gather", "root");
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> outs;
  if (getRank() == root) {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
                "tern gather: the root needs one output list of ", getSize(), " tensors");
    checkSameShape(outputs[0], in, "gather", "output tensor");
    outs = outputs[0];
  } else {
    TORCH_CHECK(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()), "tern gather: only the root (rank ",
                root, ") passes output tensors");
  }
  Buffer ib = asBuffer(in, "gather");
  return enqueue(c10d::OpType::GATHER, "tern:gather", outs,
                 [this, ib, outs, root] {
                   ternComm_t c = comm();
                   if (getRank() != root) {
                     check(calls::send(ib.ptr(), ib.count, ib.dtype, root, c), "gather");
                     return;
                   }
                   std::vector<Buffer> obs;
                   for (const auto& o : outs) obs.push_back(asBuffer(o, "gather"));
                   check(ternGroupStart(), "gather");
                   ternResult_t first = ternSuccess;
                   for (int r = 0; r < getSize(); ++r) {
                     if (r == root) continue;
                     ternResult_t res = calls::recv(obs[r].ptr(), obs[r].count, obs[r].dtype, r, c);
                     if (first == ternSuccess) first = res;
                   }
                   ternResult_t end = ternGroupEnd();
                   check(first != ternSuccess ? first : end, "gather");
                   obs[root].data.view(-1).copy_(ib.data.view(-1));
                   for (const auto& b : obs) b.writeBack();
                 },
                 {in});
}

c10::intrusive_ptr<c10d::Work> Backend::scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ScatterOptions& opts) {
  const at::Tensor& out = singleTensor(outputs, "scatter");
  checkRank(opts.rootRank, "scatter", "root");
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> ins;
  if (getRank() == root) {
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(),
                "tern scatter: the root needs one input list of ", getSize(), " tensors");
    checkSameShape(inputs[0], out, "scatter", "input tensor");
    ins = inputs[0];
  } else {
    TORCH_CHECK(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()), "tern scatter: only the root (rank ", root,
                ") passes input tensors");
  }
  Buffer ob = asBuffer(out, "scatter");
  return enqueue(c10d::OpType::SCATTER, "tern:scatter", outputs, [this, ob, ins, root] {
    ternComm_t c = comm();
    if (getRank() != root) {
      check(calls::recv(ob.ptr(), ob.count, ob.dtype, root, c), "scatter");
      ob.writeBack();
      return;
    }
    std::vector<Buffer> ibs;
    for (const auto& i : ins) ibs.push_back(asBuffer(i, "scatter"));
    check(ternGroupStart(), "scatter");
    ternResult_t first = ternSuccess;
    for (int r = 0; r < getSize(); ++r) {
      if (r == root) continue;
      ternResult_t res = calls::send(ibs[r].ptr(), ibs[r].count, ibs[r].dtype, r, c);
      if (first == ternSuccess) first = res;
    }
    ternResult_t end = ternGroupEnd();
    check(first != ternSuccess ? first : end, "scatter");
    ob.data.view(-1).copy_(ibs[root].data.view(-1));
    ob.writeBack();
  });
}

c10::intrusive_ptr<c10d::Work> Backend::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                       std::vector<std::vector<at::Tensor>>& inputs,
                                                       const c10d::ReduceScatterOptions& opts) {
  const at::Tensor& out = singleTensor(outputs, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(),
              "tern reduce_scatter: expects one input list of ", getSize(), " tensors");
  checkSameShape(inputs[0], out, "reduce_scatter", "input tensor");
  Buffer ob = asBuffer(out, "reduce_scatter");
  Reduction red = reductionOf(opts.reduceOp, out.scalar_type(), "reduce_scatter");
  std::vector<at::Tensor> ins = inputs[0];
  return enqueue(c10d::OpType::REDUCE_SCATTER, "tern:reduce_scatter", outputs, [this, ob, ins, red]() mutable {
    at::Tensor flat = concatenated(ins, "reduce_scatter");  // a copy: premultiplying leaves the inputs alone
    red.premultiply(flat);
    check(calls::reduceScatter(flat.data_ptr(), ob.ptr(), ob.count, ob.dtype, red.op, comm()), "reduce_scatter");
    ob.writeBack();
  });
}

c10::intrusive_ptr<c10d::Work> Backend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                             const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "tern reduce_scatter_tensor: output dtype ",
              c10::toString(output.scalar_type()), " differs from input dtype ", c10::toString(input.scalar_type()));
  TORCH_CHECK(input.numel() == output.numel() * getSize(), "tern reduce_scatter_tensor: the input has ", input.numel(),
              " elements, expected ", output.numel() * getSize(), " (", getSize(), " ranks x ", output.numel(), ")");
  Buffer ib = asBuffer(input, "reduce_scatter_tensor");
  Buffer ob = asBuffer(output, "reduce_scatter_tensor");
  Reduction red = reductionOf(opts.reduceOp, output.scalar_type(), "reduce_scatter_tensor");
  return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, "tern:reduce_scatter_tensor", {output},
                 [this, ib, ob, red]() mutable {
                   at::Tensor in = ib.data;
                   if (red.premultiplies()) {
                     in = in.clone();
                     red.premultiply(in);
                   }
                   check(calls::reduceScatter(in.data_ptr(), ob.ptr(), ob.count, ob.dtype, red.op, comm()),
                         "reduce_scatter_tensor");
                   ob.writeBack();
                 });
}

c10::intrusive_ptr<c10d::Work> Backend::reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                        std::vector<at::Tensor>& inputs,
                                                                        const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "tern reduce_scatter_tensor_coalesced: ", outputs.size(),
              " outputs for ", inputs.size(), " inputs");
  std::vector<Buffer> ins, outs;
  std::vector<Reduction> reds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TORCH_CHECK(
        outputs[i].scalar_type() == inputs[i].scalar_type() && inputs[i].numel() == outputs[i].numel() * getSize(),
        "tern reduce_scatter_tensor_coalesced: input ", i, " has ", inputs[i].numel(), " elements of ",
        c10::toString(inputs[i].scalar_type()), ", expected ", outputs[i].numel() * getSize(), " of ",
        c10::toString(outputs[i].scalar_type()));
    ins.push_back(asBuffer(inputs[i], "reduce_scatter_tensor_coalesced"));
    outs.push_back(asBuffer(outputs[i], "reduce_scatter_tensor_coalesced"));
    reds.push_back(reductionOf(opts.reduceOp, outputs[i].scalar_type(), "reduce_scatter_tensor_coalesced"));
  }
  return enqueue(
      c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED, "tern:reduce_scatter_tensor_coalesced", outputs,
      [this, ins, outs, reds]() mutable {
        for (size_t i = 0; i < ins.size(); ++i) {
          at::Tensor in = ins[i].data;
          if (reds[i].premultiplies()) {
            in = in.clone();
            reds[i].premultiply(in);
          }
          check(calls::reduceScatter(in.data_ptr(), outs[i].ptr(), outs[i].count, outs[i].dtype, reds[i].op, comm()),
                "reduce_scatter_tensor_coalesced");
          outs[i].writeBack();
        }
      });
}

c10::intrusive_ptr<c10d::Work> Backend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                      std::vector<int64_t>& outputSplitSizes,
                                                      std::vector<int64_t>& inputSplitSizes,
                                                      const c10d::AllToAllOptions&) {
  const int n = getSize();
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "tern all_to_all_single: output dtype ",
              c10::toString(output.scalar_type()), " differs from input dtype ", c10::toString(input.scalar_type()));
  Buffer ib = asBuffer(input, "all_to_all_single");
  Buffer ob = asBuffer(output, "all_to_all_single");
  if (outputSplitSizes.empty() && inputSplitSizes.empty()) {
    TORCH_CHECK(ib.count % n == 0 && ob.count == ib.count, "tern all_to_all_single: input of ", input.numel(),
                " and output of ", output.numel(), " elements cannot be split evenly over ", n, " ranks");
    return enqueue(c10d::OpType::ALLTOALL_BASE, "tern:all_to_all_single", {output}, [this, ib, ob, n] {
      check(calls::alltoAll(ib.ptr(), ob.ptr(), ib.count / n, ib.dtype, comm()), "all_to_all_single");
      ob.writeBack();
    });
  }
  // Split sizes count rows of dimension 0; tern counts elements.
  auto countsOf = [&](const at::Tensor& t, const Buffer& b, const std::vector<int64_t>& splits, const char* what) {
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    const size_t perRow = rows == 0 ? 0 : b.count / static_cast<size_t>(rows);
    std::vector<size_t> counts(n), displs(n);
    if (splits.empty()) {
      TORCH_CHECK(rows % n == 0, "tern all_to_all_single: ", what, " dimension 0 of ", rows,
                  " rows cannot be split evenly over ", n, " ranks");
      for (int r = 0; r < n; ++r) counts[r] = static_cast<size_t>(rows / n) * perRow;
    } else {
      TORCH_CHECK(static_cast<int>(splits.size()) == n, "tern all_to_all_single: ", splits.size(), " ", what,
                  " split sizes for a group of ", n);
      int64_t total = 0;
      for (int r = 0; r < n; ++r) {
        TORCH_CHECK(splits[r] >= 0, "tern all_to_all_single: negative ", what, " split size ", splits[r]);
        total += splits[r];
        counts[r] = static_cast<size_t>(splits[r]) * perRow;
      }
      TORCH_CHECK(total == rows, "tern all_to_all_single: ", what, " split sizes sum to ", total,
                  " but dimension 0 has ", rows, " rows");
    }
    size_t at = 0;
    for (int r = 0; r < n; ++r) {
      displs[r] = at;
      at += counts[r];
    }
    return std::make_pair(counts, displs);
  };
  auto [sendCounts, sendDispls] = countsOf(input, ib, inputSplitSizes, "input");
  auto [recvCounts, recvDispls] = countsOf(output, ob, outputSplitSizes, "output");
  return enqueue(c10d::OpType::ALLTOALL_BASE, "tern:all_to_all_single", {output},
                 [this, ib, ob, sendCounts, sendDispls, recvCounts, recvDispls] {
                   check(calls::alltoAllv(ib.ptr(), sendCounts.data(), sendDispls.data(), ob.ptr(), recvCounts.data(),
                                          recvDispls.data(), ib.dtype, comm()),
                         "all_to_all_single");
                   ob.writeBack();
                 });
}

c10::intrusive_ptr<c10d::Work> Backend::alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                                 const c10d::AllToAllOptions&) {
  const int n = getSize();
  TORCH_CHECK(static_cast<int>(inputs.size()) == n && static_cast<int>(outputs.size()) == n,
              "tern all_to_all: ", inputs.size(), " inputs and ", outputs.size(), " outputs for a group of ", n);
  std::vector<size_t> sendCounts(n), sendDispls(n), recvCounts(n), recvDispls(n);
  size_t sendAt = 0, recvAt = 0;
  for (int r = 0; r < n; ++r) {
    TORCH_CHECK(
        inputs[r].scalar_type() == inputs[0].scalar_type() && outputs[r].scalar_type() == inputs[0].scalar_type(),
        "tern all_to_all: every input and output tensor needs the same dtype");
    sendCounts[r] = asBuffer(inputs[r], "all_to_all").count;
    recvCounts[r] = asBuffer(outputs[r], "all_to_all").count;
    sendDispls[r] = sendAt;
    recvDispls[r] = recvAt;
    sendAt += sendCounts[r];
    recvAt += recvCounts[r];
  }
  const ternDataType_t dtype = ternTypeOf(inputs[0].scalar_type(), "all_to_all");
  return enqueue(c10d::OpType::ALLTOALL, "tern:all_to_all", outputs,
                 [this, inputs, outputs, sendCounts, sendDispls, recvCounts, recvDispls, recvAt, dtype] {
                   at::Tensor in = concatenated(inputs, "all_to_all");
                   at::Tensor out = flatLike(in, static_cast<int64_t>(recvAt));
                   check(calls::alltoAllv(in.data_ptr(), sendCounts.data(), sendDispls.data(), out.data_ptr(),
                                          recvCounts.data(), recvDispls.data(), dtype, comm()),
                         "all_to_all");
                   for (size_t r = 0; r < outputs.size(); ++r) {
                     copyFlatInto(
                         outputs[r],
                         out.narrow(0, static_cast<int64_t>(recvDispls[r]), static_cast<int64_t>(recvCounts[r])),
                         "all_to_all");
                   }
                 });
}

c10::intrusive_ptr<c10d::Work> Backend::pointToPoint(bool isSend, at::Tensor tensor, int peer, const char* title) {
  const char* name = isSend ? "send" : "recv";
  checkRank(peer, name, "peer");
  Buffer b = asBuffer(tensor, name);
  const c10d::OpType type = isSend ? c10d::OpType::SEND : c10d::OpType::RECV;
  if (coalescing_) {
    auto work = c10::make_intrusive<Work>(getRank(), type, title, std::vector<at::Tensor>{tensor}, nullptr,
                                          devicesOf(deviceOf({tensor})));
    coalesced_.push_back({isSend, tensor, peer, work});
    return work;
  }
  return enqueue(type, title, {tensor}, [this, b, peer, isSend, name] {
    if (isSend) {
      check(calls::send(b.ptr(), b.count, b.dtype, peer, comm()), name);
    } else {
      check(calls::recv(b.ptr(), b.count, b.dtype, peer, comm()), name);
      b.writeBack();
    }
  });
}

c10::intrusive_ptr<c10d::Work> Backend::send(std::vector<at::Tensor>& tensors, int dstRank, int /*tag*/) {
  // Like NCCL, tern matches point-to-point messages by order per pair of ranks; tags are not used.
  return pointToPoint(true, singleTensor(tensors, "send"), dstRank, "tern:send");
}

c10::intrusive_ptr<c10d::Work> Backend::recv(std::vector<at::Tensor>& tensors, int srcRank, int /*tag*/) {
  return pointToPoint(false, singleTensor(tensors, "recv"), srcRank, "tern:recv");
}

c10::intrusive_ptr<c10d::Work> Backend::recvAnysource(std::vector<at::Tensor>&, int) {
  TORCH_CHECK(false, "tern recv: receiving from any source is not supported; name the source rank (src=...)");
}

void Backend::startCoalescing() {
  TORCH_CHECK(!coalescing_, "tern: startCoalescing called twice without endCoalescing");
  coalescing_ = true;
  coalesced_.clear();
}

c10::intrusive_ptr<c10d::Work> Backend::endCoalescing() {
  TORCH_CHECK(coalescing_, "tern: endCoalescing without startCoalescing");
  coalescing_ = false;
  std::vector<PendingPeerOp> ops;
  ops.swap(coalesced_);
  std::vector<at::Tensor> tensors;
  for (const auto& op : ops) tensors.push_back(op.tensor);
  const std::optional<c10::Device> device = deviceOf(tensors);
  auto work = c10::make_intrusive<Work>(
      getRank(), c10d::OpType::COALESCED, "tern:coalesced", tensors,
      [this, ops] {
        if (ops.empty()) return;
        ternComm_t c = comm();
        std::vector<Buffer> buffers;
        for (const auto& op : ops) buffers.push_back(asBuffer(op.tensor, "batch_isend_irecv"));
        check(ternGroupStart(), "batch_isend_irecv");
        ternResult_t first = ternSuccess;
        for (size_t i = 0; i < ops.size(); ++i) {
          const Buffer& b = buffers[i];
          ternResult_t r = ops[i].isSend ? calls::send(b.ptr(), b.count, b.dtype, ops[i].peer, c)
                                         : calls::recv(b.ptr(), b.count, b.dtype, ops[i].peer, c);
          if (first == ternSuccess) first = r;
        }
        ternResult_t end = ternGroupEnd();
        check(first != ternSuccess ? first : end, "batch_isend_irecv");
        for (size_t i = 0; i < ops.size(); ++i) {
          if (!ops[i].isSend) buffers[i].writeBack();
        }
      },
      devicesOf(device));
  for (const auto& op : ops) work->addFollower(op.work);
  submit(work, device);
  return work;
}

c10::intrusive_ptr<c10d::Work> Backend::barrier(const c10d::BarrierOptions&) {
  return enqueue(c10d::OpType::BARRIER, "tern:barrier", {}, [this] { check(calls::barrier(comm()), "barrier"); });
}

c10::intrusive_ptr<c10d::Work> Backend::allreduceCompressed(at::Tensor& tensor, const std::string& codec, int64_t key,
                                                            bool average) {
  const auto type = tensor.scalar_type();
  TORCH_CHECK(type == at::kFloat || type == at::kHalf || type == at::kBFloat16,
              "tern compressed allreduce: needs a float32, float16 or bfloat16 tensor, got ", c10::toString(type));
  TORCH_CHECK(tensor.is_contiguous(), "tern compressed allreduce: needs a contiguous tensor (a DDP bucket is)");
  TORCH_CHECK(tensor.device().is_cpu(), "tern compressed allreduce: runs on CPU tensors only for now, got a tensor on ",
              tensor.device().str(), " (TERN_COMPRESS compresses device collectives through the staged engine)");
  Buffer b = asBuffer(tensor, "compressed allreduce");
  CompressorKey wanted{key, tensor.numel(), type, codec};
  return enqueue(c10d::OpType::ALLREDUCE, "tern:all_reduce_compressed", {tensor}, [this, b, wanted, average] {
    auto it = compressors_.find(wanted.key);
    if (it != compressors_.end() && it->second.first != wanted) {
      ternCompressorDestroy(it->second.second);
      compressors_.erase(it);
      it = compressors_.end();
    }
    if (it == compressors_.end()) {
      ternCompressor_t c = nullptr;
      check(ternCompressorCreate(wanted.codec.c_str(), nullptr, b.count, b.dtype, &c), "compressor create");
      it = compressors_.emplace(wanted.key, std::make_pair(wanted, c)).first;
    }
    check(ternAllReduceCompressed(b.ptr(), b.ptr(), b.count, b.dtype, average ? ternAvg : ternSum, it->second.second,
                                  comm()),
          "compressed allreduce");
  });
}

void Backend::abort() {
  if (aborted_.exchange(true)) return;
  queue_.failPending(std::make_exception_ptr(c10::DistBackendError(
      {__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
      c10::str("tern: the process group (rank ", getRank(), " of ", getSize(), ") was aborted"))));
  ternComm_t c = comm_;
  comm_ = nullptr;
  ternCommAbort(c);  // fails the running operation (if any) on every rank, then frees the communicator
  queue_.stop();
}

void Backend::shutdown() {
  if (comm_ == nullptr) return;
  queue_.drain();
  queue_.stop();
  for (auto& [key, entry] : compressors_) ternCompressorDestroy(entry.second);
  compressors_.clear();
  ternCommDestroy(comm_);
  comm_ = nullptr;
}

}  // namespace tern::torch_backend
