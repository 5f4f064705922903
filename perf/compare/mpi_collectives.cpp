// mpi_collectives: the Open MPI baseline for tern's collectives (mpi_allreduce, the name the allreduce comparison
// scripts run, is a link to it: --coll defaults to allreduce).
//
// Same table as gloo_allreduce and oneccl_collectives (nccl-tests style, one row per size; collectives.hpp says what
// a size means for each collective) so perf/compare/common.sh parses every tool alike. Standalone on purpose: it
// must not link tern.
//
//   mpirun --allow-run-as-root --bind-to core -np 2 mpi_collectives --coll alltoallv -b 8 -e 256M -f 2 -n 20 -w 5

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <climits>
#include <cstdio>
#include <string>
#include <vector>

#include "collectives.hpp"
#include "sweep_cli.hpp"

namespace {

using tern::compare::CallShape;
using tern::compare::Coll;

int Int(size_t v) { return static_cast<int>(v); }

std::vector<int> Ints(const std::vector<size_t>& v) {
  std::vector<int> out;
  for (size_t x : v) out.push_back(Int(x));
  return out;
}

std::string ToolName(const char* argv0) {
  std::string s(argv0);
  const size_t slash = s.find_last_of('/');
  return slash == std::string::npos ? s : s.substr(slash + 1);
}

int Run(const tern::compare::SweepOptions& o, const std::string& tool, int rank, int n) {
  // MPI counts are int: every buffer of the sweep must fit (alltoallv's hot receiver gets the most).
  if (tern::compare::MaxRecvElements(o.coll.coll, o.max_bytes / sizeof(float), n) > static_cast<size_t>(INT_MAX)) {
    if (rank == 0) std::fprintf(stderr, "%s: MPI counts are int; max size too large\n", tool.c_str());
    return 2;
  }
  const int root = o.root;
  tern::compare::Backend b;
  b.tool = tool.c_str();
  b.rank = rank;
  b.n = n;
  b.now_sec = []() { return MPI_Wtime(); };
  b.combine = [](double v, char op) {
    double out = 0;
    MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, op == '<' ? MPI_MIN : op == '>' ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD);
    return out;
  };
  const bool inplace = o.inplace;
  switch (o.coll.coll) {
    case Coll::kAllReduce:
      b.call = [inplace](const CallShape& s, const float* send, float* recv) {
        MPI_Allreduce(inplace ? MPI_IN_PLACE : send, recv, Int(s.count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      };
      break;
    case Coll::kAllGather:
      b.call = [](const CallShape& s, const float* send, float* recv) {
        MPI_Allgather(send, Int(s.send), MPI_FLOAT, recv, Int(s.send), MPI_FLOAT, MPI_COMM_WORLD);
      };
      break;
    case Coll::kReduceScatter:
      b.call = [](const CallShape& s, const float* send, float* recv) {
        MPI_Reduce_scatter_block(send, recv, Int(s.recv), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      };
      break;
    case Coll::kBroadcast:
      // MPI_Bcast is in place: the root sends from the buffer everyone receives into.
      b.call = [root](const CallShape& s, const float*, float* recv) {
        MPI_Bcast(recv, Int(s.count), MPI_FLOAT, root, MPI_COMM_WORLD);
      };
      break;
    case Coll::kReduce:
      b.call = [root](const CallShape& s, const float* send, float* recv) {
        MPI_Reduce(send, recv, Int(s.count), MPI_FLOAT, MPI_SUM, root, MPI_COMM_WORLD);
      };
      break;
    case Coll::kAllToAll:
      b.call = [n](const CallShape& s, const float* send, float* recv) {
        const int per = Int(s.count / static_cast<size_t>(n));
        MPI_Alltoall(send, per, MPI_FLOAT, recv, per, MPI_FLOAT, MPI_COMM_WORLD);
      };
      break;
    case Coll::kAllToAllv:
      b.call = [](const CallShape& s, const float* send, float* recv) {
        // Converted on every call, as a framework that holds size_t splits would have to.
        const std::vector<int> sc = Ints(s.send_counts), sd = Ints(s.send_displs), rc = Ints(s.recv_counts),
                               rd = Ints(s.recv_displs);
        MPI_Alltoallv(send, sc.data(), sd.data(), MPI_FLOAT, recv, rc.data(), rd.data(), MPI_FLOAT, MPI_COMM_WORLD);
      };
      break;
    case Coll::kSendRecv:
      // A ring, as tern's sendrecv_perf: send to rank+1 and receive from rank-1 in one call.
      b.call = [rank, n](const CallShape& s, const float* send, float* recv) {
        MPI_Sendrecv(send, Int(s.count), MPI_FLOAT, (rank + 1) % n, 0, recv, Int(s.count), MPI_FLOAT,
                     (rank - 1 + n) % n, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      };
      break;
  }

  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string first_line(version, static_cast<size_t>(len));
  first_line = first_line.substr(0, first_line.find_first_of("\n,"));
  char header[512];
  std::snprintf(header, sizeof(header),
                "# %s: %s, %s (float32%s), nranks=%d, iters=%d, warmup=%d, check=%d, average=%d, %s", tool.c_str(),
                first_line.c_str(), o.coll.name, o.coll.has_op ? " sum" : "", n, o.iters, o.warmup, o.check, o.average,
                o.coll.coll == Coll::kBroadcast ? "in place (MPI_Bcast has one buffer)"
                : o.inplace                     ? "in-place (MPI_IN_PLACE)"
                                                : "out-of-place");
  return tern::compare::RunSweep(b, o, header) ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Parse before MPI_Init so --help works without a launcher; every rank parses the same argv.
  const std::string tool = ToolName(argv[0]);
  tern::compare::SweepOptions o;
  tern::compare::SweepArgs args;
  CLI::App app{"MPI collectives (float32, sum where they reduce), nccl-tests style table"};
  tern::compare::AddSweepOptions(app, o, args,
                                 "allreduce only: use MPI_IN_PLACE instead of separate send/recv buffers");
  CLI11_PARSE(app, argc, argv);
  if (const std::string bad = tern::compare::FinishSweepOptions(o, args, true); !bad.empty()) {
    std::fprintf(stderr, "%s: %s\n", tool.c_str(), bad.c_str());
    return 2;
  }

  MPI_Init(&argc, &argv);
  int rank = 0;
  int n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  int rc = 2;
  if (const std::string bad = tern::compare::RootProblem(o, n); !bad.empty()) {
    if (rank == 0) std::fprintf(stderr, "%s: %s\n", tool.c_str(), bad.c_str());
  } else {
    rc = Run(o, tool, rank, n);
  }
  MPI_Finalize();
  return rc;
}
