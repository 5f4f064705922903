// oneccl_collectives: the Intel oneCCL baseline for tern's collectives, on the CPU (host buffers, no SYCL).
//
// Same table as mpi_collectives (nccl-tests style, one row per size; collectives.hpp says what a size means for
// each collective) so perf/compare/common.sh parses every tool alike. Standalone on purpose: it must not link tern.
//
// No MPI: oneCCL bootstraps through its own key-value store. Rank 0 creates the main KVS and writes its address to
// the --kvs file (written whole, then renamed into place); the other ranks wait for that file and join. The ranks
// are started by a plain launcher (perf/compare/common.sh's cmp_launch_local sets TERN_RANK and TERN_WORLD_SIZE):
//
//   CCL_WORKER_OFFLOAD=0 CCL_ATL_TRANSPORT=ofi CCL_ATL_SHM=1 FI_PROVIDER=shm TERN_RANK=r TERN_WORLD_SIZE=2
//     oneccl_collectives --coll alltoall --kvs /tmp/x/kvs -b 8 -e 256M -f 2 -n 20 -w 5
//
// The settings that decide what oneCCL measures (the transport, its worker threads) come from the environment, as
// oneCCL reads them; perf/compare_collectives.sh chooses them and its header says why.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <oneapi/ccl.hpp>
#include <string>
#include <thread>
#include <vector>

#include "collectives.hpp"
#include "sweep_cli.hpp"

namespace {

using tern::compare::CallShape;
using tern::compare::Coll;

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

// The address travels as the raw bytes of ccl::kvs::address_type; a temp name and a rename keep a reader from ever
// seeing half of it.
bool PublishAddress(const std::string& path, const ccl::kvs::address_type& address) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(address.data(), static_cast<std::streamsize>(address.size()));
    if (!f) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

bool WaitForAddress(const std::string& path, ccl::kvs::address_type& address, double timeout_sec) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_sec);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream f(path, std::ios::binary);
    if (f) {
      f.read(address.data(), static_cast<std::streamsize>(address.size()));
      if (f.gcount() == static_cast<std::streamsize>(address.size())) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

int Run(tern::compare::SweepOptions& o, const std::string& kvs_path, double kvs_timeout, int rank, int n) {
  ccl::init();
  ccl::shared_ptr_class<ccl::kvs> kvs;
  ccl::kvs::address_type address{};
  if (rank == 0) {
    kvs = ccl::create_main_kvs();
    address = kvs->get_address();
    if (n > 1 && !PublishAddress(kvs_path, address)) {
      std::fprintf(stderr, "oneccl_collectives: cannot write the KVS address to %s\n", kvs_path.c_str());
      return 2;
    }
  } else {
    if (!WaitForAddress(kvs_path, address, kvs_timeout)) {
      std::fprintf(stderr, "oneccl_collectives: rank %d: no KVS address in %s after %gs\n", rank, kvs_path.c_str(),
                   kvs_timeout);
      return 2;
    }
    kvs = ccl::create_kvs(address);
  }
  ccl::communicator comm = ccl::create_communicator(n, rank, kvs);

  const ccl::datatype f32 = ccl::datatype::float32;
  const ccl::reduction sum = ccl::reduction::sum;
  const int root = o.root;
  tern::compare::Backend b;
  b.tool = "oneccl_collectives";
  b.rank = rank;
  b.n = n;
  b.now_sec = []() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  b.combine = [&comm](double v, char op) {
    double out = 0;
    const ccl::reduction r = op == '<' ? ccl::reduction::min : op == '>' ? ccl::reduction::max : ccl::reduction::sum;
    ccl::allreduce(&v, &out, 1, ccl::datatype::float64, r, comm).wait();
    return out;
  };
  switch (o.coll.coll) {
    case Coll::kAllReduce:
      b.call = [&](const CallShape& s, const float* send, float* recv) {
        ccl::allreduce(send, recv, s.count, f32, sum, comm).wait();
      };
      break;
    case Coll::kAllGather:
      b.call = [&](const CallShape& s, const float* send, float* recv) {
        ccl::allgather(send, recv, s.send, f32, comm).wait();
      };
      break;
    case Coll::kReduceScatter:
      b.call = [&](const CallShape& s, const float* send, float* recv) {
        ccl::reduce_scatter(send, recv, s.recv, f32, sum, comm).wait();
      };
      break;
    case Coll::kBroadcast:
      // oneCCL's broadcast is in place, like MPI_Bcast: the root sends from the buffer everyone receives into.
      b.call = [&](const CallShape& s, const float*, float* recv) {
        ccl::broadcast(recv, s.count, f32, root, comm).wait();
      };
      break;
    case Coll::kReduce:
      b.call = [&](const CallShape& s, const float* send, float* recv) {
        ccl::reduce(send, recv, s.count, f32, sum, root, comm).wait();
      };
      break;
    case Coll::kAllToAll:
      b.call = [&](const CallShape& s, const float* send, float* recv) {
        ccl::alltoall(send, recv, s.count / static_cast<size_t>(n), f32, comm).wait();
      };
      break;
    case Coll::kAllToAllv:
      // oneCCL's alltoallv takes counts only: each peer's part starts where the previous one ends, which is how
      // collectives.hpp lays the MoE splits out.
      b.call = [&](const CallShape& s, const float* send, float* recv) {
        ccl::alltoallv(send, s.send_counts, recv, s.recv_counts, f32, comm).wait();
      };
      break;
    case Coll::kSendRecv:
      // A ring, as tern's sendrecv_perf: send to rank+1 and receive from rank-1, both posted before either is
      // waited for (with CCL_WORKER_OFFLOAD=0 the waits drive the progress).
      b.call = [&](const CallShape& s, const float* send, float* recv) {
        ccl::event r = ccl::recv(recv, s.count, f32, (rank - 1 + n) % n, comm);
        ccl::event w = ccl::send(const_cast<float*>(send), s.count, f32, (rank + 1) % n, comm);
        r.wait();
        w.wait();
      };
      break;
  }

  const ccl::library_version v = ccl::get_library_version();
  char header[512];
  std::snprintf(header, sizeof(header),
                "# oneccl_collectives: oneCCL %d.%d.%d, %s (float32%s), nranks=%d, iters=%d, warmup=%d, check=%d, "
                "average=%d, %s, CCL_ATL_TRANSPORT=%s FI_PROVIDER=%s CCL_WORKER_OFFLOAD=%s",
                v.major, v.minor, v.update, o.coll.name, o.coll.has_op ? " sum" : "", n, o.iters, o.warmup, o.check,
                o.average,
                o.coll.coll == Coll::kBroadcast ? "in place (oneCCL's broadcast has one buffer)"
                : o.inplace                     ? "in-place"
                                                : "out-of-place",
                std::getenv("CCL_ATL_TRANSPORT") ? std::getenv("CCL_ATL_TRANSPORT") : "(default)",
                std::getenv("FI_PROVIDER") ? std::getenv("FI_PROVIDER") : "(default)",
                std::getenv("CCL_WORKER_OFFLOAD") ? std::getenv("CCL_WORKER_OFFLOAD") : "(default)");
  const long wrong = tern::compare::RunSweep(b, o, header);
  return wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  tern::compare::SweepOptions o;
  tern::compare::SweepArgs args;
  std::string kvs_path;
  int rank = EnvInt("TERN_RANK", 0), n = EnvInt("TERN_WORLD_SIZE", 1);
  double kvs_timeout = 120;
  CLI::App app{"oneCCL collectives (float32, sum where they reduce), nccl-tests style table"};
  tern::compare::AddSweepOptions(app, o, args, "allreduce only: reduce the receive buffer into itself");
  app.add_option("--rank", rank, "this rank [TERN_RANK]")->capture_default_str();
  app.add_option("--nranks", n, "number of ranks [TERN_WORLD_SIZE]")->capture_default_str();
  app.add_option("--kvs", kvs_path, "file through which rank 0 hands out the KVS address (needed when nranks > 1)");
  app.add_option("--kvs-timeout", kvs_timeout, "seconds the other ranks wait for that file")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::string bad = tern::compare::FinishSweepOptions(o, args, true);
  if (bad.empty()) bad = tern::compare::RootProblem(o, n);
  if (n < 1 || rank < 0 || rank >= n) bad = "bad rank " + std::to_string(rank) + " of " + std::to_string(n);
  if (n > 1 && kvs_path.empty()) bad = "--kvs FILE is needed with more than one rank";
  if (!bad.empty()) {
    std::fprintf(stderr, "oneccl_collectives: %s\n", bad.c_str());
    return 2;
  }
  try {
    return Run(o, kvs_path, kvs_timeout, rank, n);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oneccl_collectives: rank %d: %s\n", rank, e.what());
    return 3;
  }
}
