// The collectives matrix that every multi-process check runs (tests/mp/mp_check.cpp over TCP, UCX, ibverbs and the
// simulated cluster; tests/shm/shm_check.cpp over shared memory, on ordinary and on ternMemAlloc buffers).
//
// allreduce, allgather, reduce-scatter, broadcast and reduce (roots cycle over the non-zero ranks), alltoall,
// alltoallv (irregular per-pair counts including zeros, displacements with gaps and blocks in reverse rank order), a
// ring exchange of sends and receives, and barrier. Every datatype; every op for the reducing ones; the caller's
// counts (per rank / per peer); in place and out of place. EVERY element of every result is compared bit for bit
// against tests/common/reference.hpp, the inputs being small integers (prod: 1, 2, -1; unsigned types: non-negative
// values and products of 1, 2, 3, since a wrapped 2^64-1 is not exact as a double) so that every reduction order is
// exact; the int8/uint8 ranges make sums and products wrap. Outputs start as noise, so an element the library did
// not write fails, and the gaps of alltoallv's output must stay untouched. Allreduce, allgather and broadcast also
// compare a hash of the output across ranks (an allreduce of max over the hash and its complement): every rank
// holds the same bits.
//
// Counts of 2^20 and more (Options::largeFrom): the full product (every dtype x op x in/out of place: 400 large calls)
// is too slow with several processes sharing a few cores, since each large call moves, and each rank checks, millions
// of elements. There a chosen subset runs instead, which keeps the size's purpose, the pipelined chunking and its odd
// tail:
//   LargeCount::kSubset: each collective takes every datatype once, in place on every other one, the reducing ones
//                        cycling the op (offset per collective) so that each op runs both in and out of place;
//   LargeCount::kLean:   the same over float32, int8, float16, float64, bfloat16: every element size, and every op
//                        once per reducing collective;
//   LargeCount::kFull:   the whole product;  LargeCount::kNone: those counts skipped.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "common/reference.hpp"
#include "common/stream_calls.hpp"
#include "mp/rank_check.hpp"
#include "tern/tern.h"

namespace collectives_matrix {

using rank_check::nranks;
using rank_check::rank;

inline constexpr ternDataType_t kTypes[] = {ternInt8,   ternUint8,   ternInt32,   ternUint32,  ternInt64,
                                            ternUint64, ternFloat16, ternFloat32, ternFloat64, ternBfloat16};
inline constexpr ternRedOp_t kOps[] = {ternSum, ternProd, ternMax, ternMin, ternAvg};
// The types of LargeCount::kLean: every element size, and (five of them) every op once per reducing collective.
inline constexpr ternDataType_t kLeanTypes[] = {ternFloat32, ternInt8, ternFloat16, ternFloat64, ternBfloat16};

enum class LargeCount { kFull, kSubset, kLean, kNone };

// The "--large full|subset|lean|none" options of argv[first..]: false (after printing usage) on anything else.
inline bool parseLargeOption(int argc, char** argv, int first, const char* modes, LargeCount* large) {
  for (int i = first; i < argc; ++i) {
    const std::string arg = argv[i], value = i + 1 < argc ? argv[i + 1] : "";
    if (arg != "--large" || (value != "full" && value != "subset" && value != "lean" && value != "none")) {
      std::fprintf(stderr, "usage: %s [%s] [--large full|subset|lean|none]\n", argv[0], modes);
      return false;
    }
    *large = value == "full"     ? LargeCount::kFull
             : value == "subset" ? LargeCount::kSubset
             : value == "lean"   ? LargeCount::kLean
                                 : LargeCount::kNone;
    ++i;
  }
  return true;
}

struct Options {
  std::vector<size_t> counts = {0, 1, 7, 1023, (size_t{1} << 20) + 3};
  LargeCount large = LargeCount::kSubset;  // what the counts from largeFrom on run
  size_t largeFrom = size_t{1} << 20;
  bool registered = false;  // buffers from ternMemAlloc instead of the heap
};

inline const char* typeName(ternDataType_t t) {
  static const char* const names[] = {"int8",   "uint8",   "int32",   "uint32",  "int64",
                                      "uint64", "float16", "float32", "float64", "bfloat16"};
  return names[t];
}

inline const char* opName(ternRedOp_t op) {
  static const char* const names[] = {"sum", "prod", "max", "min", "avg"};
  return names[op];
}

inline uint64_t mix(uint64_t x) {  // splitmix64's finalizer: every input bit moves every output bit
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Device mode (tests/mp/device_check.cpp with host threads posing as CUDA streams, tests/gpu/device_check.cpp on a
// GPU): every Buffer also has a mirror in device memory, and each collective runs as tern_cuda.h's stream-ordered
// call on the mirrors (viaDevice): the host buffers go up before the call, the stream is synchronized, and
// everything comes back down, so the checks below read what the device holds, noise included.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual void* alloc(size_t bytes) = 0;
  virtual void release(void* p) = 0;
  virtual void upload(void* device, const void* host, size_t bytes) = 0;
  virtual void download(void* host, const void* device, size_t bytes) = 0;
  virtual cudaStream_t stream() = 0;
  virtual void synchronize() = 0;
};
inline DeviceMemory* device = nullptr;

class Buffer;
inline std::vector<Buffer*>& liveBuffers() {
  static std::vector<Buffer*> live;
  return live;
}

// The communicator among a call's arguments.
inline ternComm_t lastComm() { return nullptr; }
template <typename First, typename... Rest>
ternComm_t lastComm(First first, Rest... rest) {
  if constexpr (std::is_same_v<First, ternComm_t>) {
    return first;
  } else {
    return lastComm(rest...);
  }
}

// A buffer of at least one byte (no pointer is NULL) from the heap or from ternMemAlloc, and in device mode its
// device mirror.
class Buffer {
 public:
  Buffer(size_t bytes, bool registered) : bytes_(bytes), registered_(registered) {
    const size_t allocated = std::max<size_t>(bytes, 8);
    if (registered) {
      void* p = nullptr;
      CHECK(ternMemAlloc(&p, allocated) == ternSuccess, "ternMemAlloc of %zu bytes", allocated);
      p_ = static_cast<char*>(p);
    } else {
      p_ = static_cast<char*>(std::malloc(allocated));
      CHECK(p_ != nullptr, "allocating %zu bytes", allocated);
    }
    if (device != nullptr) {
      mirror_ = static_cast<char*>(device->alloc(allocated));
      liveBuffers().push_back(this);
    }
  }
  Buffer(Buffer&& other) noexcept
      : p_(other.p_), mirror_(other.mirror_), bytes_(other.bytes_), registered_(other.registered_) {
    other.p_ = nullptr;
    other.mirror_ = nullptr;
    other.registered_ = false;
    if (mirror_ != nullptr) liveBuffers().push_back(this);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (mirror_ != nullptr) {
      device->release(mirror_);
      auto& live = liveBuffers();
      live.erase(std::remove(live.begin(), live.end(), this), live.end());
    }
    if (registered_) {
      ternMemFree(p_);
    } else {
      std::free(p_);
    }
  }
  char* data() { return p_; }
  const char* data() const { return p_; }
  size_t size() const { return bytes_; }
  char* mirror() const { return mirror_; }
  // Strictly inside: two heap buffers may be adjacent, and a pointer to the second is not one past the first.
  bool holds(const void* p) const {
    const char* c = static_cast<const char*>(p);
    return p_ != nullptr && c >= p_ && c < p_ + std::max<size_t>(bytes_, 8);
  }

 private:
  char* p_ = nullptr;
  char* mirror_ = nullptr;
  size_t bytes_;
  bool registered_;
};

// The device address of a pointer into a live Buffer; anything else (counts, arrays, the communicator) as it is.
template <typename T>
T onDevice(T v) {
  return v;
}
template <typename T>
T* onDevice(T* p) {
  if constexpr (std::is_same_v<std::remove_const_t<T>, char> || std::is_same_v<std::remove_const_t<T>, void>) {
    for (Buffer* b : liveBuffers()) {
      if (b->holds(p)) return reinterpret_cast<T*>(b->mirror() + (reinterpret_cast<const char*>(p) - b->data()));
    }
  }
  return p;
}

// host(args...) on the host, or in device mode onStream(args on the device..., the stream), synchronized, with every
// live buffer uploaded before and downloaded after.
template <typename Host, typename OnStream, typename... Args>
ternResult_t viaDevice(Host host, OnStream onStream, Args... args) {
  if (device == nullptr) return host(args...);
  for (Buffer* b : liveBuffers()) device->upload(b->mirror(), b->data(), std::max<size_t>(b->size(), 8));
  const ternResult_t r = onStream(onDevice(args)..., device->stream());
  if (r != ternSuccess) return r;
  device->synchronize();
  for (Buffer* b : liveBuffers()) device->download(b->data(), b->mirror(), std::max<size_t>(b->size(), 8));
  ternResult_t async = ternSuccess;
  return ternCommGetAsyncError(lastComm(args...), &async) == ternSuccess ? async : ternInternalError;
}

// Rank r's inputs are small integers, exact in every datatype, whose sums and products over <= 8 ranks are exact in
// every order (fp16/bf16: |v| <= 5; products of 1, 2, -1); the int8/uint8 range makes sums wrap. Unsigned types
// take non-negative values (products 1, 2, 3).
struct InputRange {
  uint64_t size;  // how many values
  double lowest;  // the values are lowest, lowest + 1, ...
  bool factors;   // except for signed products: 1, 2, -1
};

inline InputRange inputRange(ternDataType_t t, ternRedOp_t op) {
  const bool isUnsigned = !tern::ref::isSigned(t);
  if (op == ternProd) return isUnsigned ? InputRange{3, 1, false} : InputRange{3, 0, true};
  const int64_t span = tern::ref::elementSize(t) == 1 ? 60 : (t == ternFloat16 || t == ternBfloat16) ? 5 : 1000;
  return InputRange{static_cast<uint64_t>(2 * span + 1), isUnsigned ? 0.0 : static_cast<double>(-span), false};
}

// One point of the matrix. op is ternSum for collectives that do not reduce.
struct Combo {
  ternDataType_t type;
  ternRedOp_t op;
  size_t count;
  bool inPlace;
  uint64_t seed;  // the same on every rank; new inputs for every call, so a stale output cannot pass
  bool registered;
  InputRange range = inputRange(type, op);
  // Each possible input in datatype type, as tern::ref::store writes it: encoded once, copied per element.
  std::vector<char> encoded = encodeValues();

  double value(uint64_t pick) const {
    static const double factors[] = {1, 2, -1};
    return range.factors ? factors[pick] : range.lowest + static_cast<double>(pick);
  }
  std::vector<char> encodeValues() const {
    std::vector<char> e(range.size * tern::ref::elementSize(type));
    for (uint64_t k = 0; k < range.size; ++k) tern::ref::store(e.data(), k, type, value(k));
    return e;
  }
  std::string describe() const {
    return std::string(typeName(type)) + (op == ternSum ? "" : std::string(" ") + opName(op)) + " count " +
           std::to_string(count) + (inPlace ? " in place" : " out of place") + (registered ? " (ternMemAlloc)" : "");
  }
};

// Which of the combo's values rank r's element i is (r < 2^24, i < 2^40 keep every (rank, element) apart).
inline uint64_t pickInput(const Combo& c, int r, size_t i) {
  const uint64_t h = mix(c.seed + (static_cast<uint64_t>(r) << 40) + i);
  return ((h >> 32) * c.range.size) >> 32;  // uniform in [0, size)
}

// n elements of the combo's type filled with noise (floats: NaN patterns are as likely as any) so that an element
// nobody wrote cannot look right.
inline void fillNoise(char* p, size_t bytes, uint64_t seed) {
  uint64_t x = mix(seed) | 1;  // xorshift never leaves 0
  const auto next = [&x] {     // xorshift64: noise, cheaply
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
  };
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    const uint64_t word = next();
    std::memcpy(p + i, &word, 8);
  }
  if (i < bytes) {
    const uint64_t word = next();
    std::memcpy(p + i, &word, bytes - i);
  }
}

inline Buffer noise(size_t n, const Combo& c, uint64_t seed) {
  Buffer b(n * tern::ref::elementSize(c.type), c.registered);
  fillNoise(b.data(), b.size(), seed);
  return b;
}

template <size_t kBytes>
void copyInputs(char* buf, size_t at, size_t n, const Combo& c, int r, size_t from) {
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(buf + (at + i) * kBytes, c.encoded.data() + pickInput(c, r, from + i) * kBytes, kBytes);
  }
}

// Elements [at, at + n) of buf become rank r's inputs [from, from + n).
inline void fillInputs(char* buf, size_t at, size_t n, const Combo& c, int r, size_t from) {
  switch (tern::ref::elementSize(c.type)) {
    case 1:
      return copyInputs<1>(buf, at, n, c, r, from);
    case 2:
      return copyInputs<2>(buf, at, n, c, r, from);
    case 4:
      return copyInputs<4>(buf, at, n, c, r, from);
    default:
      return copyInputs<8>(buf, at, n, c, r, from);
  }
}

inline std::string show(const void* buf, size_t i, ternDataType_t t) {
  const size_t es = tern::ref::elementSize(t);
  uint64_t bits = 0;
  std::memcpy(&bits, static_cast<const char*>(buf) + i * es, es);
  char s[80];
  std::snprintf(s, sizeof(s), "%.17g (bits 0x%llx)", tern::ref::load(buf, i, t), static_cast<unsigned long long>(bits));
  return s;
}

// got[at + i] must equal want[i] bit for bit for every i < n.
inline void expectElements(const char* got, size_t at, const char* want, size_t n, ternDataType_t t, const char* what,
                           const Combo& c, const std::string& where = "") {
  const size_t es = tern::ref::elementSize(t);
  if (n == 0 || std::memcmp(got + at * es, want, n * es) == 0) return;
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(got + (at + i) * es, want + i * es, es) != 0) {
      CHECK(false, "%s %s%s: element %zu is %s, want %s", what, c.describe().c_str(), where.c_str(), at + i,
            show(got, at + i, t).c_str(), show(want, i, t).c_str());
    }
  }
}

// got[at + i] must be rank r's input from + i, for every i < n.
inline void expectInputs(const char* got, size_t at, size_t n, const Combo& c, int r, size_t from, const char* what,
                         const std::string& where = "") {
  std::vector<char> want(std::max<size_t>(n, 1) * tern::ref::elementSize(c.type));
  fillInputs(want.data(), 0, n, c, r, from);
  expectElements(got, at, want.data(), n, c.type, what, c, where);
}

// The reference reduction over every rank of inputs [from, from + n). (The inputs are exact in the datatype, so
// reduceBuffer's rounding of each one to it would change nothing.)
inline std::vector<char> reference(const Combo& c, size_t n, size_t from) {
  std::vector<char> out(std::max<size_t>(n, 1) * tern::ref::elementSize(c.type));
  std::vector<double> values(static_cast<size_t>(nranks));
  for (size_t i = 0; i < n; ++i) {
    for (int r = 0; r < nranks; ++r) values[r] = c.value(pickInput(c, r, from + i));
    tern::ref::store(out.data(), i, c.type, tern::ref::reduceValues(values.data(), nranks, c.type, c.op));
  }
  return out;
}

// Every rank holds the same bytes: the max of a hash and the max of its complement (= the min) both equal ours.
inline void expectSameOnEveryRank(ternComm_t comm, const char* p, size_t bytes, const char* what, const Combo& c) {
  uint64_t h = bytes;  // FNV-1a over 8-byte words
  for (size_t i = 0; i < bytes; i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, p + i, std::min<size_t>(8, bytes - i));
    h = (h ^ word) * 0x100000001b3ull;
  }
  uint64_t both[2] = {h, ~h};
  OK(ternAllReduce(both, both, 2, ternUint64, ternMax, comm), comm);
  CHECK(both[0] == h && both[1] == ~h, "%s %s: this rank's output differs from another rank's", what,
        c.describe().c_str());
}

// A root other than rank 0 wherever there is one, moving over the ranks from call to call.
inline int nonZeroRoot(uint64_t seed) { return nranks == 1 ? 0 : 1 + static_cast<int>(seed % (nranks - 1)); }

inline void allReduce(ternComm_t comm, const Combo& c) {
  const size_t es = tern::ref::elementSize(c.type);
  Buffer in = noise(c.count, c, c.seed), out = noise(c.count, c, ~c.seed);
  fillInputs(in.data(), 0, c.count, c, rank, 0);
  char* dst = c.inPlace ? in.data() : out.data();
  OK(viaDevice(ternAllReduce, ternAllReduceOnStream, in.data(), dst, c.count, c.type, c.op, comm), comm);
  expectElements(dst, 0, reference(c, c.count, 0).data(), c.count, c.type, "allreduce", c);
  expectSameOnEveryRank(comm, dst, c.count * es, "allreduce", c);
}

inline void allGather(ternComm_t comm, const Combo& c) {
  const size_t es = tern::ref::elementSize(c.type);
  Buffer out = noise(c.count * nranks, c, c.seed), in = noise(c.count, c, ~c.seed);
  char* src = c.inPlace ? out.data() + rank * c.count * es : in.data();
  fillInputs(src, 0, c.count, c, rank, 0);
  OK(viaDevice(ternAllGather, ternAllGatherOnStream, src, out.data(), c.count, c.type, comm), comm);
  for (int r = 0; r < nranks; ++r) {
    expectInputs(out.data(), r * c.count, c.count, c, r, 0, "allgather", ", block of rank " + std::to_string(r));
  }
  expectSameOnEveryRank(comm, out.data(), c.count * nranks * es, "allgather", c);
}

inline void reduceScatter(ternComm_t comm, const Combo& c) {
  const size_t es = tern::ref::elementSize(c.type);
  Buffer in = noise(c.count * nranks, c, c.seed), out = noise(c.count, c, ~c.seed);
  fillInputs(in.data(), 0, c.count * nranks, c, rank, 0);
  // tern.h takes two forms as in place: NCCL's recvbuff = sendbuff + rank*recvcount, and recvbuff == sendbuff
  // (every rank's output over block 0 of its input); the seed picks one per combination.
  const bool atOwnBlock = (c.seed >> 7 & 1) == 0;
  char* dst = !c.inPlace ? out.data() : atOwnBlock ? in.data() + rank * c.count * es : in.data();
  OK(viaDevice(ternReduceScatter, ternReduceScatterOnStream, in.data(), dst, c.count, c.type, c.op, comm), comm);
  expectElements(dst, 0, reference(c, c.count, rank * c.count).data(), c.count, c.type, "reduce-scatter", c);
}

inline void broadcast(ternComm_t comm, const Combo& c) {
  const size_t es = tern::ref::elementSize(c.type);
  const int root = nonZeroRoot(c.seed);
  Buffer in = noise(c.count, c, c.seed), out = noise(c.count, c, ~c.seed);
  if (rank == root) fillInputs(in.data(), 0, c.count, c, root, 0);
  char* dst = c.inPlace ? in.data() : out.data();
  OK(viaDevice(ternBroadcast, ternBroadcastOnStream, in.data(), dst, c.count, c.type, root, comm), comm);
  expectInputs(dst, 0, c.count, c, root, 0, "broadcast", " from root " + std::to_string(root));
  expectSameOnEveryRank(comm, dst, c.count * es, "broadcast", c);
}

inline void reduce(ternComm_t comm, const Combo& c) {
  const int root = nonZeroRoot(c.seed);
  Buffer in = noise(c.count, c, c.seed), out = noise(c.count, c, ~c.seed);
  fillInputs(in.data(), 0, c.count, c, rank, 0);
  char* dst = c.inPlace ? in.data() : out.data();
  OK(viaDevice(ternReduce, ternReduceOnStream, in.data(), dst, c.count, c.type, c.op, root, comm), comm);
  if (rank == root) {
    expectElements(dst, 0, reference(c, c.count, 0).data(), c.count, c.type, "reduce", c,
                   " to root " + std::to_string(root));
  }
}

// Rank r's block for peer p is its inputs [p * count, (p + 1) * count).
inline void alltoall(ternComm_t comm, const Combo& c) {
  Buffer in = noise(c.count * nranks, c, c.seed), out = noise(c.count * nranks, c, ~c.seed);
  fillInputs(in.data(), 0, c.count * nranks, c, rank, 0);
  char* dst = c.inPlace ? in.data() : out.data();
  OK(viaDevice(ternAlltoAll, ternAlltoAllOnStream, in.data(), dst, c.count, c.type, comm), comm);
  for (int r = 0; r < nranks; ++r) {
    expectInputs(dst, r * c.count, c.count, c, r, rank * c.count, "alltoall", ", block from rank " + std::to_string(r));
  }
}

// What rank s sends rank d in an alltoallv around count: none for about a third of the pairs (every sender has a
// zero once there are 3 ranks), otherwise count plus 0..4, so no two blocks need be alike.
inline size_t alltoallvCount(const Combo& c, int s, int d) {
  const uint64_t salt = c.seed % 3;
  if ((s + 2 * d + salt) % 3 == 0) return 0;
  return c.count + static_cast<size_t>((s * 7 + d * 11 + salt) % 5);
}

// Displacements for blocks of the given sizes in reverse rank order, a gap of (rank % 3) elements before each:
// the library has to follow the displacements, not assume blocks packed in rank order.
inline size_t layout(const std::vector<size_t>& counts, std::vector<size_t>* displs) {
  size_t at = 0;
  for (int r = nranks - 1; r >= 0; --r) {
    at += static_cast<size_t>(r % 3);
    (*displs)[r] = at;
    at += counts[r];
  }
  return at;
}

// Rank s's block for peer d holds its inputs from d * (count + 4) on: distinct for every pair. In place, the send
// and receive layouts overlap in the one buffer.
inline void alltoallv(ternComm_t comm, const Combo& c) {
  const size_t n = static_cast<size_t>(nranks), stride = c.count + 4, es = tern::ref::elementSize(c.type);
  std::vector<size_t> sendCounts(n), sendDispls(n), recvCounts(n), recvDispls(n);
  for (int r = 0; r < nranks; ++r) {
    sendCounts[r] = alltoallvCount(c, rank, r);
    recvCounts[r] = alltoallvCount(c, r, rank);
  }
  const size_t sendExtent = layout(sendCounts, &sendDispls), recvExtent = layout(recvCounts, &recvDispls);
  Buffer in = noise(c.inPlace ? std::max(sendExtent, recvExtent) : sendExtent, c, c.seed);
  for (int r = 0; r < nranks; ++r) fillInputs(in.data(), sendDispls[r], sendCounts[r], c, rank, r * stride);
  Buffer out = noise(recvExtent, c, ~c.seed);
  const std::vector<char> untouched(out.data(), out.data() + out.size());
  char* dst = c.inPlace ? in.data() : out.data();
  OK(viaDevice(ternAlltoAllv, ternAlltoAllvOnStream, in.data(), sendCounts.data(), sendDispls.data(), dst,
               recvCounts.data(), recvDispls.data(), c.type, comm),
     comm);
  for (int r = 0; r < nranks; ++r) {
    expectInputs(dst, recvDispls[r], recvCounts[r], c, r, rank * stride, "alltoallv",
                 ", " + std::to_string(recvCounts[r]) + " elements from rank " + std::to_string(r));
  }
  if (!c.inPlace) {  // the gaps between the blocks are not the library's to write
    std::vector<bool> inBlock(recvExtent, false);
    for (int r = 0; r < nranks; ++r) {
      for (size_t i = 0; i < recvCounts[r]; ++i) inBlock[recvDispls[r] + i] = true;
    }
    for (size_t i = 0; i < recvExtent; ++i) {
      if (!inBlock[i]) {
        expectElements(out.data(), i, untouched.data() + i * es, 1, c.type, "alltoallv (a gap between blocks)", c);
      }
    }
  }
}

// Every rank sends a block to both ring neighbours and receives one from each, in one group (with 2 ranks both
// go to the same peer and must pair up in issue order; with 1, to itself).
inline void sendRecv(ternComm_t comm, const Combo& c) {
  const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  Buffer toNext = noise(c.count, c, c.seed), toPrev = noise(c.count, c, c.seed + 1);
  Buffer fromPrev = noise(c.count, c, ~c.seed), fromNext = noise(c.count, c, ~c.seed + 1);
  fillInputs(toNext.data(), 0, c.count, c, rank, 0);
  fillInputs(toPrev.data(), 0, c.count, c, rank, c.count);
  // One group of four calls: in device mode, four stream-ordered ones recorded and enqueued together at its end.
  const auto exchange = [&](auto send, auto recv, auto... stream) {
    ternResult_t r = ternGroupStart();
    if (r == ternSuccess) r = send(onDevice(toNext.data()), c.count, c.type, next, comm, stream...);
    if (r == ternSuccess) r = send(onDevice(toPrev.data()), c.count, c.type, prev, comm, stream...);
    if (r == ternSuccess) r = recv(onDevice(fromPrev.data()), c.count, c.type, prev, comm, stream...);
    if (r == ternSuccess) r = recv(onDevice(fromNext.data()), c.count, c.type, next, comm, stream...);
    const ternResult_t end = ternGroupEnd();
    return r != ternSuccess ? r : end;
  };
  OK(viaDevice([&](ternComm_t) { return exchange(ternSend, ternRecv); },
               [&](ternComm_t, cudaStream_t s) { return exchange(ternSendOnStream, ternRecvOnStream, s); }, comm),
     comm);
  expectInputs(fromPrev.data(), 0, c.count, c, prev, 0, "send/recv", ", from the previous rank");
  expectInputs(fromNext.data(), 0, c.count, c, next, c.count, "send/recv", ", from the next rank");
}

inline const char* largeName(LargeCount large) {
  switch (large) {
    case LargeCount::kFull:
      return "all";
    case LargeCount::kSubset:
      return "every type once";
    case LargeCount::kLean:
      return "one type per element size";
    default:
      return "skipped";
  }
}

// The matrix of one collective: the full product below o.largeFrom, and from there what o.large says. Prints how
// many combinations passed.
template <typename Run>
void runMatrix(ternComm_t comm, const char* name, bool reduces, bool hasInPlace, int opOffset, const Options& o,
               Run run) {
  int passed = 0, largePassed = 0;
  uint64_t call = 0;  // the seed chain: from the collective's name, so it differs per collective and not per rank
  for (const char* p = name; *p != 0; ++p) call = mix(call ^ static_cast<unsigned char>(*p));
  const auto one = [&](ternDataType_t t, ternRedOp_t op, size_t count, bool inPlace) {
    call = mix(call);
    run(comm, Combo{t, op, count, inPlace, call, o.registered});
    ++passed;
    if (count >= o.largeFrom) ++largePassed;
  };
  std::string smallCounts, largeCounts;
  for (size_t count : o.counts) {
    const bool isLarge = count >= o.largeFrom;
    (isLarge ? largeCounts : smallCounts) += " " + std::to_string(count);
    if (isLarge && o.large == LargeCount::kNone) continue;
    if (isLarge && (o.large == LargeCount::kSubset || o.large == LargeCount::kLean)) {
      const std::vector<ternDataType_t> types =
          o.large == LargeCount::kSubset ? std::vector<ternDataType_t>(std::begin(kTypes), std::end(kTypes))
                                         : std::vector<ternDataType_t>(std::begin(kLeanTypes), std::end(kLeanTypes));
      for (size_t k = 0; k < types.size(); ++k) {
        one(types[k], reduces ? kOps[(k + opOffset) % ternNumOps] : ternSum, count, hasInPlace && k % 2 == 1);
      }
      continue;
    }
    for (ternDataType_t t : kTypes) {
      for (int op = 0; op < (reduces ? ternNumOps : 1); ++op) {
        for (bool inPlace : {false, true}) {
          if (inPlace && !hasInPlace) continue;
          one(t, kOps[op], count, inPlace);
        }
      }
    }
  }
  if (rank == 0) {
    std::printf("rank 0: %s%s: %d combinations passed (%d types%s, counts%s%s; %d at%s: %s)\n", name,
                o.registered ? " (ternMemAlloc)" : "", passed, ternNumTypes, reduces ? " x 5 ops" : "",
                smallCounts.c_str(), hasInPlace ? ", in and out of place" : "", largePassed, largeCounts.c_str(),
                largeName(o.large));
    std::fflush(stdout);
  }
}

// Ranks leave a barrier only after the last one entered: one rank arrives late (the first, then the last), and
// every other rank must have waited a good part of that delay.
inline void barrierCheck(ternComm_t comm) {
  int rounds = 0;
  const auto delay = std::chrono::milliseconds(300);
  for (int late = 0; late < nranks && nranks > 1; late += std::max(1, nranks - 1)) {
    OK(ternBarrier(comm), comm);
    if (rank == late) std::this_thread::sleep_for(delay);
    const auto start = std::chrono::steady_clock::now();
    OK(ternBarrier(comm), comm);
    const auto waited = std::chrono::steady_clock::now() - start;
    CHECK(rank == late || waited >= delay / 3, "barrier returned after %.1f ms while rank %d was %lld ms late",
          std::chrono::duration<double, std::milli>(waited).count(), late, static_cast<long long>(delay.count()));
    ++rounds;
  }
  for (int i = 0; i < 5; ++i, ++rounds) OK(ternBarrier(comm), comm);
  if (rank == 0) std::printf("rank 0: barrier: %d rounds passed\n", rounds);
}

// The whole matrix; exits on the first wrong element.
inline void run(ternComm_t comm, const Options& o) {
  runMatrix(comm, "allreduce", true, true, 0, o, allReduce);
  runMatrix(comm, "allgather", false, true, 0, o, allGather);
  runMatrix(comm, "reduce-scatter", true, true, 1, o, reduceScatter);
  runMatrix(comm, "broadcast", false, true, 0, o, broadcast);
  runMatrix(comm, "reduce", true, true, 2, o, reduce);
  runMatrix(comm, "alltoall", false, true, 0, o, alltoall);
  runMatrix(comm, "alltoallv", false, true, 0, o, alltoallv);
  runMatrix(comm, "send/recv", false, false, 0, o, sendRecv);
  barrierCheck(comm);
}

// The whole matrix in device mode on `memory` (the buffers' mirrors live there for the duration).
inline void runOnDevice(ternComm_t comm, DeviceMemory& memory, LargeCount large) {
  device = &memory;
  Options options;
  options.large = large;
  run(comm, options);
  device = nullptr;
}

}  // namespace collectives_matrix
