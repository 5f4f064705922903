#include "core/device_compressed_calls.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "algorithms/compressed.hpp"
#include "algorithms/hier_layout.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "core/communicator.hpp"
#include "core/nccl_device_engine.hpp"
#include "core/operation_pool.hpp"
#include "core/staged_device_calls.hpp"

namespace tern {

namespace {

// Bump allocator over one device scratch allocation; 64-byte aligned (payloads must be 4-byte aligned, and the
// staged path copies whole cache lines best).
class DeviceScratch {
 public:
  size_t take(size_t bytes) {
    const size_t at = next_;
    next_ += (bytes + 63) & ~static_cast<size_t>(63);
    return at;
  }
  size_t total() const { return std::max<size_t>(next_, 64); }

 private:
  size_t next_ = 0;
};

// A payload in device memory: where it is and how many bytes.
struct Payload {
  void* data;
  size_t bytes;
};

// One exchange of payloads between every pair of `group` (ranks; this rank at position `me`), as a point-to-point
// batch (every send and receive posted at once), in the host schedules' pairwise order: sendTo(p) is what goes to
// group[p], recvFrom(p) where group[p]'s payload lands. Enqueued on stream: through NCCL when it runs the
// communicator's device calls, else through the staged path (the payloads copied through pinned memory).
template <class SendTo, class RecvFrom>
void exchange(const DeviceCompressedCalls::Call& call, const std::vector<int>& group, int me, SendTo sendTo,
              RecvFrom recvFrom) {
  const int g = static_cast<int>(group.size());
  if (g <= 1) return;
  auto op = newOperation(Collective::kPointToPoint, nullptr, nullptr, 0, ternUint8, ternSum, 0);
  op->recordsAlgorithm = false;  // ternCommLastAlgorithm names the compressed allreduce
  for (int k = 1; k < g; ++k) {
    const int to = (me + k) % g, from = (me - k + g) % g;
    const Payload out = sendTo(to), in = recvFrom(from);
    op->transfers.push_back({true, group[to], out.data, out.bytes});
    op->transfers.push_back({false, group[from], in.data, in.bytes});
    op->args.count += out.bytes + in.bytes;
  }
  if (call.nccl != nullptr && NcclDeviceEngine::runs(*op)) {
    call.nccl->launch(*op, call.stream);
  } else {
    call.staged.launch(call.comm, op, call.stream);
  }
}

}  // namespace

// Where one two-phase piece's buffers lie in the call's scratch: up to `count` elements over a group of g.
struct DeviceCompressedCalls::TwoPhaseLayout {
  TwoPhaseLayout(DeviceScratch& scratch, const compress::Codec& codec, compress::DeviceCodecs& codecs, size_t count,
                 int g)
      : send(static_cast<size_t>(g)), recv(static_cast<size_t>(g)), gather(static_cast<size_t>(g)) {
    size_t largest = 0, largestPayload = 0;
    for (int c = 0; c < g; ++c) {
      const size_t len = chunkOffset(count, g, c + 1) - chunkOffset(count, g, c);
      largest = std::max(largest, len);
      largestPayload = std::max(largestPayload, codec.payloadBytes(len));
    }
    for (size_t& at : send) at = scratch.take(largestPayload);
    for (size_t& at : recv) at = scratch.take(largestPayload);
    for (size_t& at : gather) at = scratch.take(largestPayload);
    acc = scratch.take(largest * sizeof(float));
    workspaceBytes = codecs.workspaceBytes(codec, largest);
    workspace = scratch.take(workspaceBytes);
  }
  std::vector<size_t> send, recv, gather;
  size_t acc = 0, workspace = 0, workspaceBytes = 0;
};

DeviceCompressedCalls::DeviceCompressedCalls(DeviceStreams& streams, compress::DeviceCodecs& codecs)
    : streams_(streams), codecs_(codecs) {}

DeviceCompressedCalls::~DeviceCompressedCalls() {
  // Every call's stream work came before its scratch's marker, the error feedback's uses included: once the markers
  // are reached (or a bounded wait has passed) nothing on a stream reads the memory any more.
  reclaim(true);
  if (!retired_.empty()) return;  // a stream still runs past the deadline: its memory is left allocated
  for (auto& [compressor, f] : feedback_) {
    codecs_.freeDevice(f.worker);
    codecs_.freeDevice(f.server);
  }
}

DeviceCompressedCalls::Feedback& DeviceCompressedCalls::feedbackFor(const Compressor& c, void* stream) {
  auto it = feedback_.find(&c);
  if (it != feedback_.end()) return it->second;
  Feedback f;
  const size_t bytes = c.count * sizeof(float);
  f.worker = static_cast<float*>(codecs_.allocDevice(bytes));
  codecs_.zeroAsync(f.worker, bytes, stream);
  if (c.codec->kind() != compress::CodecKind::kTopK) {  // the sparse all-gather has no server side
    f.server = static_cast<float*>(codecs_.allocDevice(bytes));
    codecs_.zeroAsync(f.server, bytes, stream);
  }
  return feedback_.emplace(&c, f).first->second;
}

void DeviceCompressedCalls::retire(void* memory, void* stream) noexcept {
  try {
    retired_.push_back({memory, streams_.recordMarker(stream)});
  } catch (...) {
    // No marker, so no knowing when the stream is done with it: left allocated rather than freed under a kernel.
  }
}

void DeviceCompressedCalls::reclaim(bool wait) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (auto it = retired_.begin(); it != retired_.end();) {
    while (wait && !streams_.markerReached(it->marker) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!streams_.markerReached(it->marker)) {  // still in use (or, waiting, past the deadline: left allocated)
      ++it;
      continue;
    }
    streams_.releaseMarker(it->marker);
    codecs_.freeDevice(it->memory);
    it = retired_.erase(it);
  }
}

void DeviceCompressedCalls::twoPhasePiece(const Call& call, const TwoPhaseLayout& at, const std::vector<int>& group,
                                          int me, size_t base, size_t count, const void* src, ternDataType_t srcType,
                                          float* dst) {
  const compress::Codec& codec = *call.compressor.codec;
  const int g = static_cast<int>(group.size());
  char* scratch = call.scratch;
  auto chunk = [&](int c) { return chunkOffset(count, g, c); };
  auto chunkLen = [&](int c) { return chunk(c + 1) - chunk(c); };
  auto ctx = [&](size_t offset) { return compress::EncodeContext{call.compressor.seed, call.step, offset}; };
  auto payload = [&](int c) { return codec.payloadBytes(chunkLen(c)); };
  const size_t elem = dataTypeSize(srcType), myOff = chunk(me), myLen = chunkLen(me);
  auto* acc = reinterpret_cast<float*>(scratch + at.acc);
  // Phase 1: encode every chunk with the worker feedback (global offsets); chunk c goes to group[c].
  for (int c = 0; c < g; ++c) {
    codecs_.encodeAsync(codec, static_cast<const char*>(src) + chunk(c) * elem, srcType, chunkLen(c),
                        scratch + at.send[c], ctx(base + chunk(c)), call.feedback.worker + base + chunk(c),
                        scratch + at.workspace, at.workspaceBytes, call.stream);
  }
  exchange(
      call, group, me,
      [&](int to) {
        return Payload{scratch + at.send[to], payload(to)};
      },
      [&](int from) {
        return Payload{scratch + at.recv[from], payload(me)};
      });
  // This rank's chunk: the g payloads summed in group order, averaged over every rank of the job, re-encoded with
  // the server feedback.
  for (int p = 0; p < g; ++p) {
    codecs_.decodeAsync(codec, scratch + (p == me ? at.send[me] : at.recv[p]), myLen, acc, p > 0, call.stream);
  }
  if (call.average) codecs_.divideAsync(acc, myLen, call.comm.size(), call.stream);
  codecs_.encodeAsync(codec, acc, ternFloat32, myLen, scratch + at.gather[me], ctx(base + myOff),
                      call.feedback.server + base + myOff, scratch + at.workspace, at.workspaceBytes, call.stream);
  // Phase 2: every chunk's reduced payload to every member, decoded into dst.
  exchange(
      call, group, me,
      [&](int) {
        return Payload{scratch + at.gather[me], payload(me)};
      },
      [&](int from) {
        return Payload{scratch + at.gather[from], payload(from)};
      });
  for (int c = 0; c < g; ++c) {
    codecs_.decodeAsync(codec, scratch + at.gather[c], chunkLen(c), dst + chunk(c), false, call.stream);
  }
}

const char* DeviceCompressedCalls::allReduce(Communicator& comm, StagedDeviceCalls& staged, NcclDeviceEngine* nccl,
                                             const Operation& op, Compressor& c, const std::vector<int>* hostOf,
                                             void* stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  reclaim(false);
  const compress::Codec& codec = *c.codec;
  const CollArgs& a = op.args;
  const int n = comm.size(), rank = comm.rank();
  const size_t count = a.count, elem = dataTypeSize(a.dtype);
  const bool fp32Out = a.dtype == ternFloat32;
  const bool sparse = codec.kind() == compress::CodecKind::kTopK;
  const bool hierarchical = !sparse && hostOf != nullptr;
  const char* algorithm = sparse ? "sparse_allgather" : hierarchical ? "compressed_hier" : "compressed_2phase";
  const uint64_t step = c.step++;
  if (count == 0) return algorithm;
  const auto* in = static_cast<const char*>(op.input);
  auto* out = static_cast<char*>(op.output);
  Call call{comm, staged, nccl, stream, c, feedbackFor(c, stream), step, a.op == ternAvg, nullptr};
  // The call's scratch goes back once the stream has passed what was enqueued, also when an exchange throws.
  struct RetireAtExit {
    DeviceCompressedCalls& self;
    void* memory = nullptr;
    void* stream;
    ~RetireAtExit() {
      if (memory != nullptr) self.retire(memory, stream);
    }
  } retireScratch{*this, nullptr, stream};
  std::vector<int> everyone(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) everyone[r] = r;

  if (sparse) {
    // The sparse all-gather (buildSparseAllGatherAllReduce): every rank's whole tensor, gathered and summed.
    const size_t payload = codec.payloadBytes(count), workspace = codecs_.workspaceBytes(codec, count);
    DeviceScratch layout;
    std::vector<size_t> payloads(static_cast<size_t>(n));
    for (size_t& p : payloads) p = layout.take(payload);
    const size_t acc = fp32Out ? 0 : layout.take(count * sizeof(float)), ws = layout.take(workspace);
    char* scratch = call.scratch = static_cast<char*>(codecs_.allocDevice(layout.total()));
    retireScratch.memory = scratch;
    float* sum = fp32Out ? reinterpret_cast<float*>(out) : reinterpret_cast<float*>(scratch + acc);
    codecs_.encodeAsync(codec, in, a.dtype, count, scratch + payloads[rank], compress::EncodeContext{c.seed, step, 0},
                        call.feedback.worker, scratch + ws, workspace, stream);
    exchange(
        call, everyone, rank,
        [&](int) {
          return Payload{scratch + payloads[rank], payload};
        },
        [&](int from) {
          return Payload{scratch + payloads[from], payload};
        });
    for (int p = 0; p < n; ++p) codecs_.decodeAsync(codec, scratch + payloads[p], count, sum, p > 0, stream);
    if (call.average) codecs_.divideAsync(sum, count, n, stream);
    if (!fp32Out) codecs_.castAsync(out, a.dtype, sum, count, stream);
    return algorithm;
  }

  const size_t piece = twoPhasePieceElems(count, n, BuildOptions{});
  if (!hierarchical) {
    // The two-phase allreduce (buildCompressedTwoPhaseAllReduce), piece after piece; one scratch serves every
    // piece, which run one after another on the stream.
    DeviceScratch layout;
    const TwoPhaseLayout at(layout, codec, codecs_, piece, n);
    const size_t wideAt = fp32Out ? 0 : layout.take(piece * sizeof(float));
    char* scratch = call.scratch = static_cast<char*>(codecs_.allocDevice(layout.total()));
    retireScratch.memory = scratch;
    for (size_t base = 0; base < count; base += piece) {
      const size_t pc = std::min(piece, count - base);
      float* wide = fp32Out ? reinterpret_cast<float*>(out) + base : reinterpret_cast<float*>(scratch + wideAt);
      twoPhasePiece(call, at, everyone, rank, base, pc, in + base * elem, a.dtype, wide);
      if (!fp32Out) codecs_.castAsync(out + base * elem, a.dtype, wide, pc, stream);
    }
    return algorithm;
  }

  // The hierarchical form (buildCompressedHierAllReduce, fp32): per piece, slice j of every rank of a node summed
  // uncompressed by local rank j (in local-rank order), the node sums of slice j through the two-phase exchange among
  // local rank j of every node, the decoded slices gathered inside the node uncompressed.
  BuildOptions options;
  options.hostOf = *hostOf;
  const algo::HostLayout h = algo::hostLayout(options, rank, n);
  const std::vector<int>& node = h.nodes[h.myNode];
  const int g = h.nodeSize(h.myNode), me = h.myLocal;
  const std::vector<int> group = h.group(static_cast<size_t>(me));
  const size_t largestSlice = chunkOffset(piece, g, 1) + 1;
  DeviceScratch layout;
  const TwoPhaseLayout at(layout, codec, codecs_, largestSlice, static_cast<int>(group.size()));
  std::vector<size_t> incomingAt(static_cast<size_t>(g));
  for (size_t& i : incomingAt) i = layout.take(largestSlice * sizeof(float));
  const size_t sumAt = layout.take(largestSlice * sizeof(float));
  char* scratch = call.scratch = static_cast<char*>(codecs_.allocDevice(layout.total()));
  retireScratch.memory = scratch;
  auto* input = reinterpret_cast<const float*>(in);
  auto* output = reinterpret_cast<float*>(out);
  auto* sum = reinterpret_cast<float*>(scratch + sumAt);
  for (size_t base = 0; base < count; base += piece) {
    const size_t pc = std::min(piece, count - base);
    auto sliceOff = [&](int j) { return base + chunkOffset(pc, g, j); };
    auto sliceLen = [&](int j) { return chunkOffset(pc, g, j + 1) - chunkOffset(pc, g, j); };
    const size_t myOff = sliceOff(me), myLen = sliceLen(me);
    auto incoming = [&](int p) {
      return p == me ? input + myOff : reinterpret_cast<const float*>(scratch + incomingAt[p]);
    };
    // 1. Inside the node, uncompressed: slice j of this rank's input to local rank j.
    exchange(
        call, node, me,
        [&](int to) {
          return Payload{const_cast<float*>(input) + sliceOff(to), sliceLen(to) * sizeof(float)};
        },
        [&](int from) {
          return Payload{scratch + incomingAt[from], myLen * sizeof(float)};
        });
    codecs_.addAsync(sum, incoming(0), incoming(1), myLen, stream);
    for (int p = 2; p < g; ++p) codecs_.addAsync(sum, sum, incoming(p), myLen, stream);
    // 2. The node sums of this slice across nodes (global offsets: one worker and one server residual per element).
    twoPhasePiece(call, at, group, h.myNode, myOff, myLen, sum, ternFloat32, output + myOff);
    // 3. Inside the node, uncompressed: every rank's decoded slice to every other.
    exchange(
        call, node, me,
        [&](int) {
          return Payload{output + myOff, myLen * sizeof(float)};
        },
        [&](int from) {
          return Payload{output + sliceOff(from), sliceLen(from) * sizeof(float)};
        });
  }
  return algorithm;
}

}  // namespace tern
