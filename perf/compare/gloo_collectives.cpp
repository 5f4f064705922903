// gloo_collectives: the Gloo baseline for tern's collectives other than allreduce, over Gloo's TCP transport (the
// only one it has on the CPU): the calls PyTorch's ProcessGroupGloo makes for all_gather, all_to_all(_single),
// broadcast, reduce and send/recv, so that its column is what a PyTorch job on the gloo backend would get.
//
// Same table as mpi_collectives and oneccl_collectives (nccl-tests style, one row per size; collectives.hpp says what
// a size means for each collective and holds the timing loop), so perf/compare/common.sh parses every tool alike.
// Standalone on purpose: it must not link tern. The ranks meet through a FileStore directory, as gloo_allreduce's:
//
//   TERN_RANK=r TERN_WORLD_SIZE=2 gloo_collectives --coll alltoall --store /tmp/x/store -b 1K -e 16M -f 4 -n 20 -w 5
//
// reduce_scatter is refused: Gloo's options API (gloo/*.h with *Options) has none, only a legacy in-place class
// with its own layout, and ProcessGroupGloo does not offer one on CPU tensors either. allreduce is gloo::allreduce
// with its default (ring) algorithm; gloo_allreduce is the driver that also tries bcube and the legacy classes.

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/broadcast.h>
#include <gloo/config.h>
#include <gloo/math.h>
#include <gloo/reduce.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives.hpp"
#include "gloo_mesh.hpp"
#include "sweep_cli.hpp"

namespace {

using tern::compare::CallShape;
using tern::compare::Coll;

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

// Gloo's options take non-const pointers for inputs they only read.
float* Writable(const float* p) { return const_cast<float*>(p); }

std::vector<int64_t> Elements(const std::vector<size_t>& counts) { return {counts.begin(), counts.end()}; }

// A collective whose options take one input and one output of the shape's sizes (allgather, alltoall).
template <typename Options>
std::function<void(const CallShape&, const float*, float*)> InputOutputCall(std::shared_ptr<gloo::Context> ctx,
                                                                            void (*run)(Options&)) {
  return [ctx = std::move(ctx), run](const CallShape& s, const float* send, float* recv) {
    Options opts(ctx);
    opts.setInput(Writable(send), s.send);
    opts.setOutput(recv, s.recv);
    run(opts);
  };
}

int Run(tern::compare::SweepOptions& o, const tern::compare::GlooMeshOptions& g, int rank, int n) {
  const auto ctx = tern::compare::ConnectGlooMesh(g, rank, n);
  auto barrier = [ctx]() { tern::compare::GlooBarrier(ctx); };

  const int root = o.root;
  tern::compare::Backend b;
  b.tool = "gloo_collectives";
  b.rank = rank;
  b.n = n;
  b.now_sec = []() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  b.combine = [ctx](double v, char op) {
    gloo::AllreduceOptions opts(ctx);
    opts.setOutput(&v, 1);
    const auto lowest = static_cast<ReduceFn>(&gloo::min<double>);
    const auto highest = static_cast<ReduceFn>(&gloo::max<double>);
    const auto total = static_cast<ReduceFn>(&gloo::sum<double>);
    opts.setReduceFunction(op == '<' ? lowest : op == '>' ? highest : total);
    gloo::allreduce(opts);
    return v;
  };
  switch (o.coll.coll) {
    case Coll::kAllReduce:
      b.call = [ctx](const CallShape& s, const float* send, float* recv) {
        gloo::AllreduceOptions opts(ctx);
        if (send != recv) opts.setInput(Writable(send), s.count);
        opts.setOutput(recv, s.count);
        opts.setReduceFunction(static_cast<ReduceFn>(&gloo::sum<float>));
        gloo::allreduce(opts);
      };
      break;
    case Coll::kAllGather:
      b.call = InputOutputCall<gloo::AllgatherOptions>(ctx, &gloo::allgather);
      break;
    case Coll::kBroadcast:
      // In place, as MPI_Bcast and oneCCL's broadcast (and ProcessGroupGloo's): the root sends from the buffer
      // everyone receives into.
      b.call = [ctx, root](const CallShape& s, const float*, float* recv) {
        gloo::BroadcastOptions opts(ctx);
        opts.setOutput(recv, s.count);
        opts.setRoot(root);
        gloo::broadcast(opts);
      };
      break;
    case Coll::kReduce:
      b.call = [ctx, root](const CallShape& s, const float* send, float* recv) {
        gloo::ReduceOptions opts(ctx);
        opts.setInput(Writable(send), s.count);
        opts.setOutput(recv, s.count);
        opts.setRoot(root);
        opts.setReduceFunction(static_cast<ReduceFn>(&gloo::sum<float>));
        gloo::reduce(opts);
      };
      break;
    case Coll::kAllToAll:
      b.call = InputOutputCall<gloo::AlltoallOptions>(ctx, &gloo::alltoall);
      break;
    case Coll::kAllToAllv:
      // Each peer's part starts where the previous one ends, which is how collectives.hpp lays the MoE splits out.
      b.call = [ctx](const CallShape& s, const float* send, float* recv) {
        gloo::AlltoallvOptions opts(ctx);
        opts.setInput(Writable(send), Elements(s.send_counts));
        opts.setOutput(recv, Elements(s.recv_counts));
        gloo::alltoallv(opts);
      };
      break;
    case Coll::kSendRecv:
      // A ring, as tern's sendrecv_perf: send to rank+1 and receive from rank-1, both posted before either is
      // waited for, through unbound buffers as ProcessGroupGloo's send/recv use them.
      b.call = [ctx, rank, n](const CallShape& s, const float* send, float* recv) {
        const size_t bytes = s.count * sizeof(float);
        if (n == 1) {
          std::memcpy(recv, send, bytes);
          return;
        }
        auto in = ctx->createUnboundBuffer(recv, bytes);
        auto out = ctx->createUnboundBuffer(Writable(send), bytes);
        constexpr uint64_t kSlot = 1;
        in->recv((rank - 1 + n) % n, kSlot);
        out->send((rank + 1) % n, kSlot);
        in->waitRecv();
        out->waitSend();
      };
      break;
    case Coll::kReduceScatter:
      std::fprintf(stderr, "gloo_collectives: Gloo's options API has no reduce_scatter\n");
      return 2;
  }

  char header[512];
  std::snprintf(header, sizeof(header),
                "# gloo_collectives: Gloo %d.%d.%d, %s (float32%s), transport=tcp (%s), nranks=%d, iters=%d, "
                "warmup=%d, check=%d, average=%d, %s",
                GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, GLOO_VERSION_PATCH, o.coll.name, o.coll.has_op ? " sum" : "",
                g.iface.empty() ? g.host.c_str() : ("iface " + g.iface).c_str(), n, o.iters, o.warmup, o.check,
                o.average,
                o.coll.coll == Coll::kBroadcast ? "in place (Gloo's broadcast has one buffer)"
                : o.inplace                     ? "in-place"
                                                : "out-of-place");
  const long wrong = tern::compare::RunSweep(b, o, header);
  barrier();
  return wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  tern::compare::SweepOptions o;
  tern::compare::SweepArgs args;
  args.coll = "allgather";
  tern::compare::GlooMeshOptions g;
  g.prefix = "gloo_collectives";
  int rank = EnvInt("TERN_RANK", EnvInt("OMPI_COMM_WORLD_RANK", -1));
  int n = EnvInt("TERN_WORLD_SIZE", EnvInt("OMPI_COMM_WORLD_SIZE", -1));
  CLI::App app{"Gloo collectives (float32, sum where they reduce) over TCP, nccl-tests style table"};
  tern::compare::AddSweepOptions(app, o, args, "allreduce only: reduce the receive buffer into itself");
  app.add_option("--rank", rank, "this rank [TERN_RANK, OMPI_COMM_WORLD_RANK]");
  app.add_option("--nranks", n, "number of ranks [TERN_WORLD_SIZE, OMPI_COMM_WORLD_SIZE]");
  app.add_option("--store", g.store, "FileStore rendezvous directory shared by all ranks");
  app.add_option("--prefix", g.prefix, "key prefix inside the store (distinct concurrent jobs need distinct ones)")
      ->capture_default_str();
  app.add_option("--host", g.host, "address to bind the TCP device to")->capture_default_str();
  app.add_option("--iface", g.iface, "network interface to bind to (overrides --host)");
  app.add_option("--timeout", g.timeout_s, "Gloo operation timeout, seconds")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::string bad = tern::compare::FinishSweepOptions(o, args, true);
  if (bad.empty()) bad = tern::compare::RootProblem(o, n);
  // Gloo keeps some byte counts in an int.
  if (bad.empty() && o.max_bytes >= (size_t{1} << 31)) bad = "sizes must stay below 2 GiB (Gloo stores them as int)";
  if (n < 1 || rank < 0 || rank >= n) bad = "bad rank " + std::to_string(rank) + " of " + std::to_string(n);
  if (g.store.empty()) bad = "--store DIR is required (a directory every rank can see)";
  if (!bad.empty()) {
    std::fprintf(stderr, "gloo_collectives: %s\n", bad.c_str());
    return 2;
  }
  try {
    return Run(o, g, rank, n);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_collectives: rank %d: %s\n", rank, e.what());
    return 3;
  }
}
