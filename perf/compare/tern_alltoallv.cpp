// tern_alltoallv: tern's side of the MoE-shaped alltoallv comparison (perf/compare_collectives.sh), with the same
// splits, timing loop and table as mpi_collectives --coll alltoallv and oneccl_collectives --coll alltoallv
// (collectives.hpp). tern's nccl-tests style perf binaries have no alltoallv; once one exists with these splits,
// the script can run it instead (TERN_ALLTOALLV_PERF). Unlike the baselines it links tern, through the public API
// only, and is built only where the tern target is.
//
//   tern-run -n 2 tern_alltoallv -b 8 -e 256M -f 2 -n 20 -w 5 [-R]

#include <tern/tern.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "collectives.hpp"
#include "sweep_cli.hpp"

namespace {

void Check(ternResult_t r, const char* what) {
  if (r == ternSuccess) return;
  std::fprintf(stderr, "tern_alltoallv: %s: %s\n", what, ternGetErrorString(r));
  std::exit(3);
}

}  // namespace

int main(int argc, char** argv) {
  tern::compare::SweepOptions o;
  o.coll = *tern::compare::FindColl("alltoallv");
  tern::compare::SweepArgs args;
  CLI::App app{"ternAlltoAllv (float32, MoE-shaped uneven splits), nccl-tests style table"};
  tern::compare::AddSweepOptions(app, o, args, nullptr);
  bool registered = false;
  app.add_flag("-R,--registered", registered,
               "allocate buffers with ternMemAlloc (peers on this host read them in place), as the perf binaries' -R");
  CLI11_PARSE(app, argc, argv);
  if (const std::string bad = tern::compare::FinishSweepOptions(o, args, false); !bad.empty()) {
    std::fprintf(stderr, "tern_alltoallv: %s\n", bad.c_str());
    return 2;
  }

  ternComm_t comm = nullptr;
  Check(ternCommInitFromEnv(&comm, nullptr), "ternCommInitFromEnv (run it under tern-run)");
  tern::compare::Backend b;
  b.tool = "tern_alltoallv";
  Check(ternCommUserRank(comm, &b.rank), "ternCommUserRank");
  Check(ternCommCount(comm, &b.n), "ternCommCount");
  b.now_sec = []() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  b.combine = [comm](double v, char op) {
    double out = 0;
    Check(ternAllReduce(&v, &out, 1, ternFloat64,
                        op == '<'   ? ternMin
                        : op == '>' ? ternMax
                                    : ternSum,
                        comm),
          "ternAllReduce");
    return out;
  };
  b.call = [comm](const tern::compare::CallShape& s, const float* send, float* recv) {
    Check(ternAlltoAllv(send, s.send_counts.data(), s.send_displs.data(), recv, s.recv_counts.data(),
                        s.recv_displs.data(), ternFloat32, comm),
          "ternAlltoAllv");
  };
  if (registered) {
    b.allocate = [](size_t bytes) {
      void* p = nullptr;
      Check(ternMemAlloc(&p, bytes), "ternMemAlloc");
      return std::shared_ptr<char>(static_cast<char*>(p), [](char* q) { ternMemFree(q); });
    };
  }
  char header[256];
  std::snprintf(header, sizeof(header),
                "# tern_alltoallv: tern, alltoallv (float32, MoE splits), nranks=%d, iters=%d, warmup=%d, check=%d, "
                "average=%d, out-of-place%s",
                b.n, o.iters, o.warmup, o.check, o.average, registered ? ", ternMemAlloc buffers" : "");
  const long wrong = tern::compare::RunSweep(b, o, header);
  ternCommDestroy(comm);
  return wrong ? 1 : 0;
}
