#include "algorithms/compressed.hpp"

#include <algorithm>

#include "compress/codec.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"

namespace tern {

namespace {

// Bump allocator over the scratch buffer; 64-byte aligned so payloads and fp32 accumulators start on cache lines.
class ScratchLayout {
 public:
  Span take(size_t bytes) {
    Span s = scratchSpan(next_, bytes);
    next_ += (bytes + 63) & ~static_cast<size_t>(63);
    return s;
  }
  size_t total() const { return next_; }

 private:
  size_t next_ = 0;
};

size_t chunkOffset(size_t count, int n, int c) { return count * static_cast<size_t>(c) / static_cast<size_t>(n); }

// Where fp32 results of elements [off, off+len) go: straight into an fp32 output, else a scratch accumulator that
// a cast step then writes to the output.
struct FloatTarget {
  Span span;
  bool needsCast;
};

// Elements per piece of the pipelined two-phase allreduce (at least one element per rank, so no chunk is empty
// unless the whole tensor is smaller than the rank count).
size_t twoPhasePieceElems(size_t count, int n, const BuildOptions& options) {
  size_t piece = std::max<size_t>(options.compressedPieceBytes / sizeof(float), static_cast<size_t>(n));
  return std::min(piece, std::max<size_t>(count, 1));
}

// One piece [base, base + count) of the two-phase allreduce. Chunk c of the piece (its elements split evenly over the
// ranks) is owned by rank c. `full` is the fp32 result of the whole tensor (the output itself for fp32).
void emitTwoPhasePiece(ScheduleBuilder& b, ScratchLayout& scratch, const compress::Codec& codec, const CollArgs& args,
                       int rank, int n, size_t base, size_t count, Span full) {
  const size_t e = dataTypeSize(args.dtype);
  const bool fp32Out = args.dtype == ternFloat32;
  std::vector<Span> sendPayload(n), gathered(n), recvPayload(n);
  std::vector<size_t> payload(n);
  for (int c = 0; c < n; ++c) {
    size_t len = chunkOffset(count, n, c + 1) - chunkOffset(count, n, c);
    payload[c] = codec.payloadBytes(len);
    sendPayload[c] = scratch.take(payload[c]);
  }
  const size_t myOff = chunkOffset(count, n, rank), myLen = chunkOffset(count, n, rank + 1) - myOff;
  for (int p = 0; p < n; ++p) recvPayload[p] = p == rank ? sendPayload[rank] : scratch.take(payload[rank]);
  Span acc = scratch.take(myLen * sizeof(float));
  Span reduced = scratch.take(payload[rank]);
  for (int c = 0; c < n; ++c) gathered[c] = c == rank ? reduced : scratch.take(payload[c]);

  // Phase 1: encode every chunk (worker error feedback) and send chunk c to rank c; the own chunk first, so that
  // its decode can start as soon as the peers' payloads arrive.
  std::vector<uint32_t> encoded(n);
  for (int k = 0; k < n; ++k) {
    const int c = (rank + k) % n;
    size_t off = base + chunkOffset(count, n, c), len = chunkOffset(count, n, c + 1) - chunkOffset(count, n, c);
    encoded[c] = b.encode(sendPayload[c], inputSpan(off * e, len * e), off, len, 0);
  }
  std::vector<uint32_t> received(n);
  for (int k = 1; k < n; ++k) {  // pairwise order: every pair sends and receives in matching order
    int to = (rank + k) % n, from = (rank - k + n) % n;
    b.send(to, sendPayload[to], {encoded[to]});
    received[from] = b.recv(from, recvPayload[from]);
  }
  received[rank] = encoded[rank];
  // Sum the n payloads of my chunk in rank order (the same order on every rank: deterministic).
  uint32_t last = 0;
  for (int p = 0; p < n; ++p) {
    std::vector<uint32_t> deps{received[p]};
    if (p > 0) deps.push_back(last);
    last = b.decode(acc, recvPayload[p], myLen, p > 0, deps);
  }
  if (args.op == ternAvg) last = b.finalize(acc, {last});
  // Phase 2: re-encode the sum (server error feedback) and gather every chunk's payload.
  uint32_t reencoded = b.encode(reduced, acc, base + myOff, myLen, 1, {last});
  std::vector<uint32_t> got(n);
  for (int k = 1; k < n; ++k) {
    int to = (rank + k) % n, from = (rank - k + n) % n;
    b.send(to, reduced, {reencoded});
    got[from] = b.recv(from, gathered[from]);
  }
  got[rank] = reencoded;
  for (int k = 0; k < n; ++k) {
    const int c = (rank - k + n) % n;  // in arrival order
    size_t off = base + chunkOffset(count, n, c), len = chunkOffset(count, n, c + 1) - chunkOffset(count, n, c);
    Span dst{full.buffer, full.offset + off * 4, len * 4};
    uint32_t d = b.decode(dst, gathered[c], len, false, {got[c]});
    if (!fp32Out) b.cast(outputSpan(off * e, len * e), dst, len, {d});
  }
}

}  // namespace

Schedule buildCompressedTwoPhaseAllReduce(const CollArgs& args, int rank, int n, const BuildOptions& options) {
  const compress::Codec& codec = *options.codec;
  ScheduleBuilder b("compressed_2phase");
  ScratchLayout scratch;
  const size_t count = args.count;
  Span full = args.dtype == ternFloat32 ? outputSpan(0, count * 4) : scratch.take(count * sizeof(float));
  // Pieces are emitted in order and the executor runs ready local steps lowest index first, so piece k+1 is encoded
  // while piece k's payloads are on the wire. Error feedback and scales follow the element offsets, so the result
  // is the same whatever the interleaving.
  const size_t piece = twoPhasePieceElems(count, n, options);
  for (size_t base = 0; base < count || (count == 0 && base == 0); base += piece) {
    emitTwoPhasePiece(b, scratch, codec, args, rank, n, base, std::min(piece, count - base), full);
    if (count == 0) break;
  }
  b.needScratch(scratch.total());
  return b.take();
}

Schedule buildSparseAllGatherAllReduce(const CollArgs& args, int rank, int n, const BuildOptions& options) {
  const compress::Codec& codec = *options.codec;
  ScheduleBuilder b("sparse_allgather");
  size_t count = args.count, e = dataTypeSize(args.dtype);
  size_t bytes = codec.payloadBytes(count);
  ScratchLayout scratch;
  std::vector<Span> payloads(n);
  for (int p = 0; p < n; ++p) payloads[p] = scratch.take(bytes);
  bool fp32Out = args.dtype == ternFloat32;
  Span acc = fp32Out ? outputSpan(0, count * 4) : scratch.take(count * sizeof(float));
  std::vector<uint32_t> have(n);
  have[rank] = b.encode(payloads[rank], inputSpan(0, count * e), 0, count, 0);
  for (int k = 1; k < n; ++k) {
    int to = (rank + k) % n, from = (rank - k + n) % n;
    b.send(to, payloads[rank], {have[rank]});
    have[from] = b.recv(from, payloads[from]);
  }
  uint32_t last = 0;
  for (int p = 0; p < n; ++p) {
    // In place the accumulator is the input: nothing is written before this rank's own encode read it.
    std::vector<uint32_t> deps{have[p], have[rank]};
    if (p > 0) deps.push_back(last);
    last = b.decode(acc, payloads[p], count, p > 0, deps);
  }
  if (args.op == ternAvg) last = b.finalize(acc, {last});
  if (!fp32Out) b.cast(outputSpan(0, count * e), acc, count, {last});
  b.needScratch(scratch.total());
  return b.take();
}

Schedule buildCompressedAllGather(const CollArgs& args, int rank, int n, const BuildOptions& options) {
  const compress::Codec& codec = *options.codec;
  ScheduleBuilder b("compressed_allgather");
  size_t count = args.count, e = dataTypeSize(args.dtype), bytes = codec.payloadBytes(count);
  ScratchLayout scratch;
  std::vector<Span> payloads(n);
  for (int p = 0; p < n; ++p) payloads[p] = scratch.take(bytes);
  Span tmp = scratch.take(count * sizeof(float));
  std::vector<uint32_t> have(n);
  // The error-feedback state covers this rank's block only: its slice starts at 0.
  have[rank] = b.encode(payloads[rank], inputSpan(0, count * e), 0, count, 0);
  for (int k = 1; k < n; ++k) {
    int to = (rank + k) % n, from = (rank - k + n) % n;
    b.send(to, payloads[rank], {have[rank]});
    have[from] = b.recv(from, payloads[from]);
  }
  uint32_t prev = 0;
  bool first = true;
  for (int p = 0; p < n; ++p) {
    Span dst = args.dtype == ternFloat32 ? outputSpan(p * count * 4, count * 4) : tmp;
    std::vector<uint32_t> deps{have[p], have[rank]};                // in place, block `rank` is the input
    if (!first && args.dtype != ternFloat32) deps.push_back(prev);  // tmp is reused
    uint32_t d = b.decode(dst, payloads[p], count, false, deps);
    prev = args.dtype == ternFloat32 ? d : b.cast(outputSpan(p * count * e, count * e), tmp, count, {d});
    first = false;
  }
  b.needScratch(scratch.total());
  return b.take();
}

Schedule buildCompressedReduceScatter(const CollArgs& args, int rank, int n, const BuildOptions& options) {
  const compress::Codec& codec = *options.codec;
  ScheduleBuilder b("compressed_reducescatter");
  size_t count = args.count, e = dataTypeSize(args.dtype), bytes = codec.payloadBytes(count);
  ScratchLayout scratch;
  std::vector<Span> sendPayload(n), recvPayload(n);
  for (int c = 0; c < n; ++c) sendPayload[c] = scratch.take(bytes);
  for (int p = 0; p < n; ++p) recvPayload[p] = p == rank ? sendPayload[rank] : scratch.take(bytes);
  bool fp32Out = args.dtype == ternFloat32;
  Span acc = fp32Out ? outputSpan(0, count * 4) : scratch.take(count * sizeof(float));
  std::vector<uint32_t> encoded(n), received(n);
  for (int c = 0; c < n; ++c) {
    encoded[c] =
        b.encode(sendPayload[c], inputSpan(c * count * e, count * e), static_cast<uint64_t>(c) * count, count, 0);
  }
  for (int k = 1; k < n; ++k) {
    int to = (rank + k) % n, from = (rank - k + n) % n;
    b.send(to, sendPayload[to], {encoded[to]});
    received[from] = b.recv(from, recvPayload[from]);
  }
  received[rank] = encoded[rank];
  uint32_t last = 0;
  for (int p = 0; p < n; ++p) {
    std::vector<uint32_t> deps{received[p], encoded[rank]};  // in place, the output is the input's own block
    if (p > 0) deps.push_back(last);
    last = b.decode(acc, recvPayload[p], count, p > 0, deps);
  }
  if (args.op == ternAvg) last = b.finalize(acc, {last});
  if (!fp32Out) b.cast(outputSpan(0, count * e), acc, count, {last});
  b.needScratch(scratch.total());
  return b.take();
}

const char* compressedAlgorithmFor(Collective c, const compress::Codec& codec) {
  switch (c) {
    case Collective::kAllReduce:
      return codec.kind() == compress::CodecKind::kTopK ? "sparse_allgather" : "compressed_2phase";
    case Collective::kAllGather:
      return "compressed_allgather";
    case Collective::kReduceScatter:
      return "compressed_reducescatter";
    default:
      return "";
  }
}

Schedule buildCompressed(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  if (options.codec == nullptr) throwError(ternInternalError, "compressed schedule without a codec");
  switch (args.coll) {
    case Collective::kAllReduce:
      return options.codec->kind() == compress::CodecKind::kTopK
                 ? buildSparseAllGatherAllReduce(args, rank, nranks, options)
                 : buildCompressedTwoPhaseAllReduce(args, rank, nranks, options);
    case Collective::kAllGather:
      return buildCompressedAllGather(args, rank, nranks, options);
    case Collective::kReduceScatter:
      return buildCompressedReduceScatter(args, rank, nranks, options);
    default:
      throwError(ternInvalidArgument, "%s has no compressed form", collectiveName(args.coll));
  }
}

}  // namespace tern
