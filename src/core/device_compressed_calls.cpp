#include "core/device_compressed_calls.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "algorithms/compressed.hpp"
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

// One exchange of payloads between every pair of ranks, as a point-to-point batch (every send and receive posted at
// once), in the host schedules' pairwise order: sendTo(to) is what goes to rank `to`, recvFrom(from) where rank
// `from`'s payload lands. Enqueued on stream: through NCCL when it runs the communicator's device calls, else through
// the staged path (the payloads copied through pinned memory).
template <class SendTo, class RecvFrom>
void exchange(Communicator& comm, StagedDeviceCalls& staged, NcclDeviceEngine* nccl, void* stream, SendTo sendTo,
              RecvFrom recvFrom) {
  const int n = comm.size(), rank = comm.rank();
  if (n == 1) return;
  auto op = newOperation(Collective::kPointToPoint, nullptr, nullptr, 0, ternUint8, ternSum, 0);
  op->recordsAlgorithm = false;  // ternCommLastAlgorithm names the compressed allreduce
  for (int k = 1; k < n; ++k) {
    const int to = (rank + k) % n, from = (rank - k + n) % n;
    const Payload out = sendTo(to), in = recvFrom(from);
    op->transfers.push_back({true, to, out.data, out.bytes});
    op->transfers.push_back({false, from, in.data, in.bytes});
    op->args.count += out.bytes + in.bytes;
  }
  if (nccl != nullptr && NcclDeviceEngine::runs(*op)) {
    nccl->launch(*op, stream);
  } else {
    staged.launch(comm, op, stream);
  }
}

}  // namespace

DeviceCompressedCalls::DeviceCompressedCalls(DeviceStreams& streams, compress::DeviceCodecs& codecs)
    : streams_(streams), codecs_(codecs) {}

DeviceCompressedCalls::~DeviceCompressedCalls() {
  // Every call's stream work came before its scratch's marker, the error feedback's uses included: once the markers
  // are reached (or a bounded wait has passed) nothing on a stream reads the memory any more.
  reclaim(true);
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
    if (!wait && !streams_.markerReached(it->marker)) {
      ++it;
      continue;
    }
    streams_.releaseMarker(it->marker);
    codecs_.freeDevice(it->memory);
    it = retired_.erase(it);
  }
}

const char* DeviceCompressedCalls::allReduce(Communicator& comm, StagedDeviceCalls& staged, NcclDeviceEngine* nccl,
                                             const Operation& op, Compressor& c, void* stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  reclaim(false);
  const compress::Codec& codec = *c.codec;
  const CollArgs& a = op.args;
  const int n = comm.size(), rank = comm.rank();
  const size_t count = a.count, elem = dataTypeSize(a.dtype);
  const bool fp32Out = a.dtype == ternFloat32;
  const bool sparse = codec.kind() == compress::CodecKind::kTopK;
  const char* algorithm = sparse ? "sparse_allgather" : "compressed_2phase";
  const uint64_t step = c.step++;
  if (count == 0) return algorithm;
  const auto* in = static_cast<const char*>(op.input);
  auto* out = static_cast<char*>(op.output);
  Feedback& fb = feedbackFor(c, stream);
  // The call's scratch goes back once the stream has passed what was enqueued, also when an exchange throws.
  struct RetireAtExit {
    DeviceCompressedCalls& self;
    void* memory;
    void* stream;
    ~RetireAtExit() { self.retire(memory, stream); }
  };
  auto ctx = [&](uint64_t offset) { return compress::EncodeContext{c.seed, step, offset}; };

  if (sparse) {
    // The sparse all-gather (buildSparseAllGatherAllReduce): every rank's whole tensor, gathered and summed.
    const size_t payload = codec.payloadBytes(count), workspace = codecs_.workspaceBytes(codec, count);
    DeviceScratch layout;
    std::vector<size_t> payloads(static_cast<size_t>(n));
    for (size_t& p : payloads) p = layout.take(payload);
    const size_t acc = fp32Out ? 0 : layout.take(count * sizeof(float)), ws = layout.take(workspace);
    auto* scratch = static_cast<char*>(codecs_.allocDevice(layout.total()));
    const RetireAtExit retireScratch{*this, scratch, stream};
    float* sum = fp32Out ? reinterpret_cast<float*>(out) : reinterpret_cast<float*>(scratch + acc);
    codecs_.encodeAsync(codec, in, a.dtype, count, scratch + payloads[rank], ctx(0), fb.worker, scratch + ws, workspace,
                        stream);
    exchange(
        comm, staged, nccl, stream,
        [&](int) {
          return Payload{scratch + payloads[rank], payload};
        },
        [&](int from) {
          return Payload{scratch + payloads[from], payload};
        });
    for (int p = 0; p < n; ++p) codecs_.decodeAsync(codec, scratch + payloads[p], count, sum, p > 0, stream);
    if (a.op == ternAvg) codecs_.divideAsync(sum, count, n, stream);
    if (!fp32Out) codecs_.castAsync(out, a.dtype, sum, count, stream);
    return algorithm;
  }

  // The two-phase allreduce (buildCompressedTwoPhaseAllReduce), piece after piece; one scratch serves every piece,
  // which run one after another on the stream.
  const size_t piece = twoPhasePieceElems(count, n, BuildOptions{});
  auto chunkLen = [&](size_t pc, int ch) { return chunkOffset(pc, n, ch + 1) - chunkOffset(pc, n, ch); };
  size_t largest = 0, largestPayload = 0;
  for (int ch = 0; ch < n; ++ch) {
    largest = std::max(largest, chunkLen(piece, ch));
    largestPayload = std::max(largestPayload, codec.payloadBytes(chunkLen(piece, ch)));
  }
  const size_t workspace = codecs_.workspaceBytes(codec, largest);
  DeviceScratch layout;
  std::vector<size_t> sendAt(static_cast<size_t>(n)), recvAt(static_cast<size_t>(n)), gatherAt(static_cast<size_t>(n));
  for (int ch = 0; ch < n; ++ch) sendAt[ch] = layout.take(largestPayload);
  for (int p = 0; p < n; ++p) recvAt[p] = layout.take(largestPayload);
  for (int ch = 0; ch < n; ++ch) gatherAt[ch] = layout.take(largestPayload);
  const size_t accAt = layout.take(largest * sizeof(float));
  const size_t wideAt = fp32Out ? 0 : layout.take(piece * sizeof(float));
  const size_t wsAt = layout.take(workspace);
  auto* scratch = static_cast<char*>(codecs_.allocDevice(layout.total()));
  const RetireAtExit retireScratch{*this, scratch, stream};
  auto* acc = reinterpret_cast<float*>(scratch + accAt);

  for (size_t base = 0; base < count; base += piece) {
    const size_t pc = std::min(piece, count - base);
    const size_t myOff = chunkOffset(pc, n, rank), myLen = chunkLen(pc, rank);
    std::vector<size_t> payload(static_cast<size_t>(n));
    for (int ch = 0; ch < n; ++ch) payload[ch] = codec.payloadBytes(chunkLen(pc, ch));
    // Phase 1: encode every chunk with the worker feedback; chunk ch goes to rank ch.
    for (int ch = 0; ch < n; ++ch) {
      const size_t off = base + chunkOffset(pc, n, ch);
      codecs_.encodeAsync(codec, in + off * elem, a.dtype, chunkLen(pc, ch), scratch + sendAt[ch], ctx(off),
                          fb.worker + off, scratch + wsAt, workspace, stream);
    }
    exchange(
        comm, staged, nccl, stream,
        [&](int to) {
          return Payload{scratch + sendAt[to], payload[to]};
        },
        [&](int from) {
          return Payload{scratch + recvAt[from], payload[rank]};
        });
    // This rank's chunk: the n payloads summed in rank order, averaged, re-encoded with the server feedback.
    for (int p = 0; p < n; ++p) {
      const char* from = scratch + (p == rank ? sendAt[rank] : recvAt[p]);
      codecs_.decodeAsync(codec, from, myLen, acc, p > 0, stream);
    }
    if (a.op == ternAvg) codecs_.divideAsync(acc, myLen, n, stream);
    codecs_.encodeAsync(codec, acc, ternFloat32, myLen, scratch + gatherAt[rank], ctx(base + myOff),
                        fb.server + base + myOff, scratch + wsAt, workspace, stream);
    // Phase 2: every chunk's reduced payload to every rank, decoded into the output.
    exchange(
        comm, staged, nccl, stream,
        [&](int) {
          return Payload{scratch + gatherAt[rank], payload[rank]};
        },
        [&](int from) {
          return Payload{scratch + gatherAt[from], payload[from]};
        });
    for (int ch = 0; ch < n; ++ch) {
      const size_t off = chunkOffset(pc, n, ch), len = chunkLen(pc, ch);
      auto* wide =
          fp32Out ? reinterpret_cast<float*>(out) + base + off : reinterpret_cast<float*>(scratch + wideAt) + off;
      codecs_.decodeAsync(codec, scratch + gatherAt[ch], len, wide, false, stream);
      if (!fp32Out) codecs_.castAsync(out + (base + off) * elem, a.dtype, wide, len, stream);
    }
  }
  return algorithm;
}

}  // namespace tern
