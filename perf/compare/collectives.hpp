// What the multi-collective baseline drivers (mpi_collectives, oneccl_collectives) share: which collectives exist,
// what a size means for each (the convention of tern's perf binaries, which is nccl-tests'), the bus-bandwidth
// factor, the input pattern and the value every receive element must hold, the MoE-shaped alltoallv splits, and the
// timing loop that prints the table. Each driver supplies only the library calls (a Backend). Header-only and free
// of tern, as driver_common.hpp.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../common/host_buffer.hpp"
#include "driver_common.hpp"

namespace tern::compare {

enum class Coll { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kAllToAll, kAllToAllv, kSendRecv };

struct CollInfo {
  Coll coll;
  const char* name;  // the --coll spelling
  bool has_op;       // a reduction: the table's redop column says "sum"
  bool has_root;
};

inline const std::vector<CollInfo>& AllColls() {
  static const std::vector<CollInfo> colls = {
      {Coll::kAllReduce, "allreduce", true, false},
      {Coll::kAllGather, "allgather", false, false},
      {Coll::kReduceScatter, "reduce_scatter", true, false},
      {Coll::kBroadcast, "broadcast", false, true},
      {Coll::kReduce, "reduce", true, true},
      {Coll::kAllToAll, "alltoall", false, false},
      {Coll::kAllToAllv, "alltoallv", false, false},
      {Coll::kSendRecv, "sendrecv", false, false},
  };
  return colls;
}

inline std::optional<CollInfo> FindColl(const std::string& name) {
  for (const CollInfo& c : AllColls()) {
    if (name == c.name) return c;
  }
  return std::nullopt;
}

inline std::string CollNames() {
  std::string s;
  for (const CollInfo& c : AllColls()) s += (s.empty() ? "" : "|") + std::string(c.name);
  return s;
}

// nccl-tests' bus-bandwidth factors, as tern's perf binaries use them, so busbw columns compare across tools.
inline double BusFactor(Coll c, int n) {
  switch (c) {
    case Coll::kAllReduce:
      return n > 1 ? 2.0 * (n - 1) / n : 1.0;
    case Coll::kAllGather:
    case Coll::kReduceScatter:
    case Coll::kAllToAll:
    case Coll::kAllToAllv:
      return static_cast<double>(n - 1) / n;
    default:
      return 1.0;
  }
}

// Elements a size stands for: the size is the gathered buffer (allgather), the send buffer (reduce-scatter,
// alltoall, alltoallv) or the one buffer (the others), rounded down to a multiple of the ranks where it is split.
inline size_t RoundCount(Coll c, size_t count, int n) {
  switch (c) {
    case Coll::kAllGather:
    case Coll::kReduceScatter:
    case Coll::kAllToAll:
    case Coll::kAllToAllv:
      return count / static_cast<size_t>(n) * static_cast<size_t>(n);
    default:
      return count;
  }
}

// MoE-shaped alltoallv: rank `src` sends `total` elements, split over the destinations by weight. Expert
// popularity falls with the destination rank (rank 0's expert is the hot one, 2n-1 times the coldest's), and a
// per-source term makes no two senders split alike, so receivers get uneven totals, as a router's top-k choice
// gives them. The last destination takes the rounding remainder so every element is sent.
inline size_t MoeWeight(int n, int src, int dst) { return static_cast<size_t>(2 * (n - dst) - 1 + (src + dst) % 2); }

inline std::vector<size_t> MoeSendCounts(size_t total, int n, int src) {
  size_t weights = 0;
  for (int d = 0; d < n; ++d) weights += MoeWeight(n, src, d);
  std::vector<size_t> counts(static_cast<size_t>(n));
  size_t used = 0;
  for (int d = 0; d < n; ++d) {
    counts[d] = d + 1 < n ? total * MoeWeight(n, src, d) / weights : total - used;
    used += counts[d];
  }
  return counts;
}

// What rank `dst` receives from every source.
inline std::vector<size_t> MoeRecvCounts(size_t total, int n, int dst) {
  std::vector<size_t> counts(static_cast<size_t>(n));
  for (int s = 0; s < n; ++s) counts[s] = MoeSendCounts(total, n, s)[dst];
  return counts;
}

inline std::vector<size_t> Displacements(const std::vector<size_t>& counts) {
  std::vector<size_t> displs(counts.size());
  size_t at = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    displs[i] = at;
    at += counts[i];
  }
  return displs;
}

// One call's shape on one rank: elements sent and received, and (alltoallv) the per-peer splits.
struct CallShape {
  size_t count = 0;  // the table's count column
  size_t send = 0;
  size_t recv = 0;
  std::vector<size_t> send_counts, send_displs, recv_counts, recv_displs;
  std::vector<size_t> src_offsets;  // alltoallv: where my part starts in each source's send buffer
};

inline CallShape ShapeFor(Coll c, size_t count, int n, int rank) {
  CallShape s;
  s.count = count;
  const size_t per = count / static_cast<size_t>(n);
  switch (c) {
    case Coll::kAllGather:
      s.send = per;
      s.recv = count;
      break;
    case Coll::kReduceScatter:
      s.send = count;
      s.recv = per;
      break;
    case Coll::kAllToAllv:
      s.send = count;
      s.send_counts = MoeSendCounts(count, n, rank);
      s.recv_counts = MoeRecvCounts(count, n, rank);
      s.send_displs = Displacements(s.send_counts);
      s.recv_displs = Displacements(s.recv_counts);
      for (size_t r : s.recv_counts) s.recv += r;
      for (int src = 0; src < n; ++src) s.src_offsets.push_back(Displacements(MoeSendCounts(count, n, src))[rank]);
      break;
    default:
      s.send = count;
      s.recv = count;
      break;
  }
  return s;
}

// The largest receive a rank can need over a sweep up to max_count (alltoallv's hot receiver gets more than it sends).
inline size_t MaxRecvElements(Coll c, size_t max_count, int n) {
  size_t most = max_count;
  if (c == Coll::kAllToAllv) {
    for (int r = 0; r < n; ++r) most = std::max(most, ShapeFor(c, RoundCount(c, max_count, n), n, r).recv);
  }
  return std::max<size_t>(most, 1);
}

// The value receive element j of rank `rank` must hold after one call on InputValue inputs; nullopt where the
// element is not written (reduce off the root).
inline std::optional<float> ExpectedValue(Coll c, const CallShape& s, size_t j, int rank, int n, int root) {
  const float ranks_sum = static_cast<float>(n * (n + 1) / 2);
  auto reduced = [&](size_t i) { return ranks_sum * static_cast<float>(i % 1021 + 1); };
  const size_t per = s.count / static_cast<size_t>(n);
  switch (c) {
    case Coll::kAllReduce:
      return reduced(j);
    case Coll::kReduce:
      if (rank != root) return std::nullopt;
      return reduced(j);
    case Coll::kReduceScatter:
      return reduced(static_cast<size_t>(rank) * per + j);
    case Coll::kAllGather:
      return InputValue(static_cast<int>(j / per), j % per);
    case Coll::kBroadcast:
      return InputValue(root, j);
    case Coll::kAllToAll:
      // Block s of my receive buffer is block `rank` of rank s's send buffer.
      return InputValue(static_cast<int>(j / per), static_cast<size_t>(rank) * per + j % per);
    case Coll::kAllToAllv: {
      int src = 0;
      while (src + 1 < n && j >= s.recv_displs[src + 1]) ++src;
      return InputValue(src, s.src_offsets[src] + (j - s.recv_displs[src]));
    }
    case Coll::kSendRecv:
      return InputValue((rank - 1 + n) % n, j);
  }
  return std::nullopt;
}

// The library calls a driver supplies. Buffers are float32; `call` runs one collective of `shape` to completion.
struct Backend {
  const char* tool;  // the driver's name, for messages and the JSON
  int rank = 0;
  int n = 1;
  std::function<void(const CallShape& shape, const float* send, float* recv)> call;
  // Every rank's value combined: sum, min, max (used only for the timing and the wrong count, outside the timed loop).
  std::function<double(double v, char op)> combine;
  std::function<double()> now_sec;
  // Optional: where the sweep's buffers come from instead of host_buffer.hpp (tern_alltoallv -R: ternMemAlloc).
  std::function<std::shared_ptr<char>(size_t bytes)> allocate;
};

struct SweepOptions {
  CollInfo coll{Coll::kAllReduce, "allreduce", true, false};
  size_t min_bytes = 8;
  size_t max_bytes = 256u << 20;
  double step_factor = 2.0;
  int iters = 20;
  int warmup = 5;
  int check = 1;
  int average = 1;
  int root = 0;
  bool inplace = false;  // allreduce only: the receive buffer is also the input
  std::string json;
};

// Prints the header line a driver passes, then one row per size in the 8-column table of mpi_allreduce (what
// perf/compare/common.sh parses), and returns the number of wrong elements summed over ranks and sizes.
inline long RunSweep(const Backend& b, const SweepOptions& o, const std::string& header) {
  const bool leader = b.rank == 0;
  if (leader) {
    std::printf("%s\n#\n", header.c_str());
    std::printf("#       size         count      type   redop     time   algbw   busbw #wrong\n");
    std::printf("#        (B)    (elements)                        (us)  (GB/s)  (GB/s)\n");
    std::fflush(stdout);
  }
  const Coll c = o.coll.coll;
  const size_t max_count = std::max<size_t>(o.max_bytes / sizeof(float), 1);
  // Buffers sized for the largest message, allocated as tern's perf binaries allocate theirs (host_buffer.hpp).
  auto allocate = [&](size_t bytes) -> std::shared_ptr<char> {
    if (!b.allocate) {
      tern::perf::HostBuffer h = tern::perf::allocateHostBuffer(bytes);
      return std::shared_ptr<char>(h.release(), tern::perf::FreeDeleter{});
    }
    std::shared_ptr<char> p = b.allocate(bytes);
    std::memset(p.get(), 0, bytes);  // every page touched once, as allocateHostBuffer does
    return p;
  };
  const std::shared_ptr<char> send_buf = allocate(max_count * sizeof(float));
  const std::shared_ptr<char> recv_buf = allocate(MaxRecvElements(c, max_count, b.n) * sizeof(float));
  float* send = reinterpret_cast<float*>(send_buf.get());
  float* recv = reinterpret_cast<float*>(recv_buf.get());
  const double bus_factor = BusFactor(c, b.n);

  std::vector<Record> records;
  double busbw_sum = 0;
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes;) {
    const size_t count = RoundCount(c, bytes / sizeof(float), b.n);
    if (count > 0) {
      const CallShape shape = ShapeFor(c, count, b.n, b.rank);
      const float* in = o.inplace ? recv : send;
      auto once = [&]() { b.call(shape, in, recv); };
      long wrong = -1;
      if (o.check) {
        float* input = o.inplace ? recv : send;
        for (size_t i = 0; i < shape.send; ++i) input[i] = InputValue(b.rank, i);
        // Broadcast is in place in MPI and oneCCL: the root's receive buffer is its input.
        if (c == Coll::kBroadcast) {
          for (size_t i = 0; i < shape.recv; ++i) recv[i] = b.rank == o.root ? InputValue(b.rank, i) : -1.0f;
        } else if (!o.inplace) {
          std::fill(recv, recv + shape.recv, -1.0f);
        }
        once();
        wrong = 0;
        for (size_t j = 0; j < shape.recv; ++j) {
          const std::optional<float> want = ExpectedValue(c, shape, j, b.rank, b.n, o.root);
          if (want && recv[j] != *want) ++wrong;
        }
        if (o.inplace) {
          for (size_t i = 0; i < shape.send; ++i) recv[i] = InputValue(b.rank, i);
        }
      }
      for (int i = 0; i < o.warmup; ++i) once();
      once();  // the sync before the timed loop, as nccl-tests (and tern's perf binaries) do it: an untimed call
      const double t0 = b.now_sec();
      for (int i = 0; i < o.iters; ++i) once();
      const double t1 = b.now_sec();

      // The time a row reports, chosen by -a exactly as nccl-tests (and tern's perf binaries) do: 0 rank 0's, 1 the
      // average over ranks (the default), 2 the minimum, 3 the maximum.
      const double local_sec = (t1 - t0) / o.iters;
      const double sum_sec = b.combine(local_sec, '+');
      const double min_sec = b.combine(local_sec, '<');
      const double max_sec = b.combine(local_sec, '>');
      const double rank0_sec = b.combine(b.rank == 0 ? local_sec : 0.0, '+');
      const double sec = o.average == 0   ? rank0_sec
                         : o.average == 2 ? min_sec
                         : o.average == 3 ? max_sec
                                          : sum_sec / b.n;
      const long total = static_cast<long>(b.combine(static_cast<double>(std::max(wrong, 0L)), '+'));

      const double algbw = static_cast<double>(count * sizeof(float)) / 1e9 / sec;
      Record r{count * sizeof(float), count, sec * 1e6, algbw, algbw * bus_factor, o.check ? total : -1, {}};
      records.push_back(r);
      busbw_sum += r.busbw;
      if (leader) {
        std::printf("%12zu  %12zu  %8s  %6s  %7s  %6.2f  %6.2f  %5s\n", r.bytes, r.count, "float",
                    o.coll.has_op ? "sum" : "none", FormatTime(r.time_us).c_str(), r.algbw, r.busbw,
                    r.wrong < 0 ? "N/A" : std::to_string(r.wrong).c_str());
        std::fflush(stdout);
      }
    }
    const size_t next = static_cast<size_t>(static_cast<double>(bytes) * o.step_factor);
    bytes = next > bytes ? next : bytes + 1;
  }

  long total_wrong = 0;
  for (const auto& r : records) total_wrong += std::max(r.wrong, 0L);
  if (leader) {
    std::printf("# Out of bounds values : %ld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
    std::printf("# Avg bus bandwidth    : %g\n", records.empty() ? 0.0 : busbw_sum / records.size());
    std::printf("#\n");
    std::fflush(stdout);
    if (!o.json.empty()) WriteJson(b.tool, o.json, records);
  }
  return total_wrong;
}

}  // namespace tern::compare
