#include "algorithms/compressed.hpp"

#include <algorithm>
#include <map>

#include "algorithms/hier_layout.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "compress/codec.hpp"

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

// Where fp32 results of elements [off, off+len) go: straight into an fp32 output, else a scratch accumulator that
// a cast step then writes to the output.
struct FloatTarget {
  Span span;
  bool needsCast;
};

// One piece of a two-phase exchange among `group` (ranks in chunk order; this rank at position `me`): the
// piece's elements [base, base + count) of the tensor (global offsets: they index the error-feedback states and
// key the codec's RNG) are split evenly over the group, and chunk c is reduced by group[c].
struct TwoPhasePiece {
  std::vector<int> group;
  int me = 0;
  size_t base = 0, count = 0;
  Span src;  // what the worker encodes, in `srcElemBytes`-sized elements of the input dtype
  size_t srcElemBytes = 4;
  Span dst;      // the piece's fp32 result
  Span castDst;  // when non-empty, dst is then cast to it (elements of `castElemBytes`)
  size_t castElemBytes = 4;
  std::vector<uint32_t> srcDeps;  // steps the encodes of src wait for
};

// Emits the piece; returns the steps after which each chunk's result is in dst (and castDst).
std::vector<uint32_t> emitTwoPhasePiece(ScheduleBuilder& b, ScratchLayout& scratch, const compress::Codec& codec,
                                        const CollArgs& args, const TwoPhasePiece& t) {
  const int n = static_cast<int>(t.group.size()), rank = t.me;
  const size_t count = t.count;
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
    size_t off = chunkOffset(count, n, c), len = chunkOffset(count, n, c + 1) - off;
    Span src{t.src.buffer, t.src.offset + off * t.srcElemBytes, len * t.srcElemBytes};
    encoded[c] = b.encode(sendPayload[c], src, t.base + off, len, 0, t.srcDeps);
  }
  std::vector<uint32_t> received(n);
  for (int k = 1; k < n; ++k) {  // pairwise order: every pair sends and receives in matching order
    int to = (rank + k) % n, from = (rank - k + n) % n;
    b.send(t.group[to], sendPayload[to], {encoded[to]});
    received[from] = b.recv(t.group[from], recvPayload[from]);
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
  uint32_t reencoded = b.encode(reduced, acc, t.base + myOff, myLen, 1, {last});
  std::vector<uint32_t> got(n);
  for (int k = 1; k < n; ++k) {
    int to = (rank + k) % n, from = (rank - k + n) % n;
    b.send(t.group[to], reduced, {reencoded});
    got[from] = b.recv(t.group[from], gathered[from]);
  }
  got[rank] = reencoded;
  std::vector<uint32_t> done(n);
  for (int k = 0; k < n; ++k) {
    const int c = (rank - k + n) % n;  // in arrival order
    size_t off = chunkOffset(count, n, c), len = chunkOffset(count, n, c + 1) - off;
    Span dst{t.dst.buffer, t.dst.offset + off * 4, len * 4};
    done[c] = b.decode(dst, gathered[c], len, false, {got[c]});
    if (t.castDst.bytes > 0) {
      Span out{t.castDst.buffer, t.castDst.offset + off * t.castElemBytes, len * t.castElemBytes};
      done[c] = b.cast(out, dst, len, {done[c]});
    }
  }
  return done;
}

}  // namespace

size_t chunkOffset(size_t count, int n, int c) { return count * static_cast<size_t>(c) / static_cast<size_t>(n); }

// Elements per piece of the pipelined two-phase allreduce: the tensor is cut into floor(count / nominal) pieces
// (at least one) of equal size, so no piece is a small tail. Every piece costs the exchange's full round of
// synchronisations, and a tail of a few elements past the nominal size would pay that for next to nothing; pieces
// up to twice the nominal size lose little pipelining. At least one element per rank, so no chunk is empty unless
// the whole tensor is smaller than the rank count.
size_t twoPhasePieceElems(size_t count, int n, const BuildOptions& options) {
  const size_t nominal = std::max<size_t>(options.compressedPieceBytes / sizeof(float), static_cast<size_t>(n));
  const size_t pieces = std::max<size_t>(count / nominal, 1);
  return std::max<size_t>((count + pieces - 1) / pieces, 1);
}

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
    TwoPhasePiece t;
    t.group.resize(n);
    for (int r = 0; r < n; ++r) t.group[r] = r;
    t.me = rank;
    t.base = base;
    t.count = std::min(piece, count - base);
    t.srcElemBytes = t.castElemBytes = dataTypeSize(args.dtype);
    t.src = inputSpan(base * t.srcElemBytes, t.count * t.srcElemBytes);
    t.dst = Span{full.buffer, full.offset + base * 4, t.count * 4};
    if (args.dtype != ternFloat32) t.castDst = outputSpan(base * t.castElemBytes, t.count * t.castElemBytes);
    emitTwoPhasePiece(b, scratch, codec, args, t);
    if (count == 0) break;
  }
  b.needScratch(scratch.total());
  return b.take();
}

bool compressedHierApplies(const CollArgs& args, const compress::Codec& codec, const std::vector<int>& hostOf,
                           int nranks) {
  if (args.coll != Collective::kAllReduce || codec.kind() == compress::CodecKind::kTopK) return false;
  return args.dtype == ternFloat32 && evenMultiNode(hostOf, nranks);
}

bool evenMultiNode(const std::vector<int>& hostOf, int nranks) {
  if (static_cast<int>(hostOf.size()) != nranks || nranks < 4) return false;
  std::map<int, int> perHost;
  for (int h : hostOf) ++perHost[h];
  if (perHost.size() < 2) return false;
  const int g = perHost.begin()->second;
  for (const auto& [host, ranks] : perHost) {
    if (ranks != g) return false;
  }
  return g >= 2;
}

Schedule buildCompressedHierAllReduce(const CollArgs& args, int rank, int nranks, const BuildOptions& options) {
  const compress::Codec& codec = *options.codec;
  if (!compressedHierApplies(args, codec, options.hostOf, nranks)) {
    throwError(ternInternalError, "compressed_hier needs fp32 allreduce, a dense codec and equal nodes of >= 2 ranks");
  }
  ScheduleBuilder b("compressed_hier");
  ScratchLayout scratch;
  const algo::HostLayout h = algo::hostLayout(options, rank, nranks);
  const std::vector<int>& node = h.nodes[h.myNode];
  const int g = h.nodeSize(h.myNode), me = h.myLocal;
  // Inter-node group of this rank's slices: the ranks of the same local index on every node, in node order.
  const std::vector<int> group = h.group(static_cast<size_t>(me));
  const size_t count = args.count;
  // Pieces as in the flat form (pipelining: piece k+1's intra-node traffic overlaps piece k's inter-node
  // exchange); each piece is cut into g slices, slice j reduced and exchanged across nodes by local rank j.
  const size_t piece = twoPhasePieceElems(count, nranks, options);
  for (size_t base = 0; base < count; base += piece) {
    const size_t pc = std::min(piece, count - base);
    auto sliceOff = [&](int j) { return base + chunkOffset(pc, g, j); };
    auto sliceLen = [&](int j) { return chunkOffset(pc, g, j + 1) - chunkOffset(pc, g, j); };
    const size_t myOff = sliceOff(me), myLen = sliceLen(me);
    // 1. Intra-node reduce-scatter, uncompressed: every rank sends slice j of its input to local rank j, which sums
    // the g contributions in local-rank order (the same order on every node and every call: deterministic).
    std::vector<Span> incoming(g);
    for (int p = 0; p < g; ++p) {
      incoming[p] = p == me ? inputSpan(myOff * 4, myLen * 4) : scratch.take(myLen * sizeof(float));
    }
    std::vector<uint32_t> sentTo(g), arrived(g);
    for (int k = 1; k < g; ++k) {  // pairwise order, as in the two-phase exchange
      const int to = (me + k) % g, from = (me - k + g) % g;
      sentTo[to] = b.send(node[to], inputSpan(sliceOff(to) * 4, sliceLen(to) * 4));
      arrived[from] = b.recv(node[from], incoming[from]);
    }
    Span acc = scratch.take(myLen * sizeof(float));
    uint32_t summed = b.reduce(acc, incoming[0], incoming[1], {arrived[0], arrived[1]});
    for (int p = 2; p < g; ++p) summed = b.reduce(acc, acc, incoming[p], {summed, arrived[p]});
    // 2. The two-phase compressed exchange of the node sums of this slice, one rank per node. Its element offsets
    // are the slice's global ones, so every element has one worker and one server residual on the rank that
    // encodes it. The average divides by the total rank count once, on the fully reduced value.
    TwoPhasePiece t;
    t.group = group;
    t.me = h.myNode;
    t.base = myOff;
    t.count = myLen;
    t.src = acc;
    t.dst = outputSpan(myOff * 4, myLen * 4);
    t.srcDeps = {summed};
    std::vector<uint32_t> done = emitTwoPhasePiece(b, scratch, codec, args, t);
    // In place the output is the input: the own slice was read by the first reduce (a dependency of every step
    // above); the other slices are overwritten below only after they were sent.
    done.push_back(summed);
    // 3. Intra-node all-gather of the decoded slices, uncompressed (every rank of a node holds the same bits).
    for (int k = 1; k < g; ++k) {
      const int to = (me + k) % g, from = (me - k + g) % g;
      b.send(node[to], outputSpan(myOff * 4, myLen * 4), done);
      b.recv(node[from], outputSpan(sliceOff(from) * 4, sliceLen(from) * 4), {sentTo[from]});
    }
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

const char* compressedAlgorithmFor(Collective c, const compress::Codec& codec, bool hierarchical) {
  switch (c) {
    case Collective::kAllReduce:
      if (codec.kind() == compress::CodecKind::kTopK) return "sparse_allgather";
      return hierarchical ? "compressed_hier" : "compressed_2phase";
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
      if (options.codec->kind() == compress::CodecKind::kTopK) {
        return buildSparseAllGatherAllReduce(args, rank, nranks, options);
      }
      return compressedHierApplies(args, *options.codec, options.hostOf, nranks)
                 ? buildCompressedHierAllReduce(args, rank, nranks, options)
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
