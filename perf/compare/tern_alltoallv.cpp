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
  std::string min_bytes = "8", max_bytes = "256M";
  CLI::App app{"ternAlltoAllv (float32, MoE-shaped uneven splits), nccl-tests style table"};
  app.add_option("-b,--minbytes", min_bytes, "smallest message, bytes (K/M/G suffixes)")->capture_default_str();
  app.add_option("-e,--maxbytes", max_bytes, "largest message, bytes (K/M/G suffixes)")->capture_default_str();
  app.add_option("-f,--stepfactor", o.step_factor, "multiply the size by this each step")->capture_default_str();
  app.add_option("-n,--iters", o.iters, "timed iterations per size")->capture_default_str();
  app.add_option("-w,--warmup_iters", o.warmup, "untimed iterations per size")->capture_default_str();
  app.add_option("-c,--check", o.check, "verify the result once per size (0/1)")->capture_default_str();
  app.add_option("-a,--average", o.average, "time reported: 0 rank 0, 1 average, 2 min, 3 max across ranks")
      ->capture_default_str()
      ->check(CLI::Range(0, 3));
  app.add_option("-J,--json", o.json, "also write the rows as a JSON list (rank 0)");
  bool registered = false;
  app.add_flag("-R,--registered", registered,
               "allocate buffers with ternMemAlloc (peers on this host read them in place), as the perf binaries' -R");
  CLI11_PARSE(app, argc, argv);
  const auto lo = tern::compare::ParseBytes(min_bytes);
  const auto hi = tern::compare::ParseBytes(max_bytes);
  if (!lo || !hi || *lo > *hi || o.step_factor <= 1.0 || o.iters < 1 || o.warmup < 0) {
    std::fprintf(stderr, "tern_alltoallv: bad size range or iteration counts\n");
    return 2;
  }
  o.min_bytes = *lo;
  o.max_bytes = *hi;

  ternComm_t comm = nullptr;
  Check(ternCommInitFromEnv(&comm, nullptr), "ternCommInitFromEnv (run it under tern-run)");
  tern::compare::Backend b;
  b.tool = "tern_alltoallv";
  Check(ternCommUserRank(comm, &b.rank), "ternCommUserRank");
  Check(ternCommCount(comm, &b.n), "ternCommCount");
  b.barrier = [comm]() { Check(ternBarrier(comm), "ternBarrier"); };
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
