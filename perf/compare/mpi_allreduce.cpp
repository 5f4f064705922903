// mpi_allreduce: the Open MPI baseline for tern's shared-memory allreduce claims.
//
// Same table as gloo_allreduce (nccl-tests style, one row per size) so perf/compare/common.sh parses all three tools
// alike. Standalone on purpose: it must not link tern.
//
//   mpirun --allow-run-as-root --bind-to core -np 2 mpi_allreduce -b 8 -e 256M -f 2 -n 20 -w 5 [--inplace]

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "../common/host_buffer.hpp"
#include "driver_common.hpp"

namespace {

using tern::compare::FormatTime;
using tern::compare::InputValue;
using tern::compare::ParseBytes;
using tern::compare::Record;
using tern::compare::WriteJson;

struct Options {
  std::string min_bytes = "8";
  std::string max_bytes = "256M";
  double step_factor = 2.0;
  int iters = 20;
  int warmup = 5;
  int check = 1;
  int average = 1;
  bool inplace = false;
  std::string json;
};

int Run(const Options& o, int rank, int n) {
  const auto min_bytes = ParseBytes(o.min_bytes);
  const auto max_bytes = ParseBytes(o.max_bytes);
  if (!min_bytes || !max_bytes || *min_bytes > *max_bytes || o.step_factor <= 1.0) {
    if (rank == 0) {
      std::fprintf(stderr, "mpi_allreduce: bad size range -b %s -e %s -f %g\n", o.min_bytes.c_str(),
                   o.max_bytes.c_str(), o.step_factor);
    }
    return 2;
  }
  if (*max_bytes / sizeof(float) > static_cast<size_t>(INT32_MAX)) {
    if (rank == 0) std::fprintf(stderr, "mpi_allreduce: MPI counts are int; max size too large\n");
    return 2;
  }

  const double bus_factor = n > 1 ? 2.0 * (n - 1) / n : 1.0;
  if (rank == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string first_line(version, static_cast<size_t>(len));
    first_line = first_line.substr(0, first_line.find_first_of("\n,"));
    std::printf("# mpi_allreduce: %s, nranks=%d, iters=%d, warmup=%d, check=%d, average=%d, %s\n", first_line.c_str(),
                n, o.iters, o.warmup, o.check, o.average, o.inplace ? "in-place (MPI_IN_PLACE)" : "out-of-place");
    std::printf("#\n");
    std::printf("#       size         count      type   redop     time   algbw   busbw #wrong\n");
    std::printf("#        (B)    (elements)                        (us)  (GB/s)  (GB/s)\n");
    std::fflush(stdout);
  }

  // Buffers sized for the largest message, allocated as tern's perf binaries allocate theirs (host_buffer.hpp).
  const size_t max_count = std::max<size_t>(*max_bytes / sizeof(float), 1);
  tern::perf::HostBuffer send_buf = tern::perf::allocateHostBuffer(max_count * sizeof(float));
  tern::perf::HostBuffer recv_buf = tern::perf::allocateHostBuffer(max_count * sizeof(float));
  float* send = reinterpret_cast<float*>(send_buf.get());
  float* recv = reinterpret_cast<float*>(recv_buf.get());

  std::vector<Record> records;
  double busbw_sum = 0;
  for (size_t bytes = *min_bytes; bytes <= *max_bytes;) {
    const size_t count = bytes / sizeof(float);
    if (count > 0) {
      const int icount = static_cast<int>(count);
      // In-place reduces recv into itself; values then grow by n per call, which is harmless for timing (x86 adds
      // of large values and even inf cost the same; only denormals are slow).
      auto allreduce = [&]() {
        MPI_Allreduce(o.inplace ? MPI_IN_PLACE : send, recv, icount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      };

      long wrong = -1;
      if (o.check) {
        float* in = o.inplace ? recv : send;
        for (size_t i = 0; i < count; ++i) in[i] = InputValue(rank, i);
        allreduce();
        wrong = 0;
        const float ranks_sum = static_cast<float>(n * (n + 1) / 2);
        for (size_t i = 0; i < count; ++i) {
          if (recv[i] != ranks_sum * static_cast<float>(i % 1021 + 1)) ++wrong;
        }
        if (o.inplace) {
          for (size_t i = 0; i < count; ++i) recv[i] = InputValue(rank, i);
        }
      }
      for (int i = 0; i < o.warmup; ++i) allreduce();
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      for (int i = 0; i < o.iters; ++i) allreduce();
      const double t1 = MPI_Wtime();

      // The time a row reports, chosen by -a exactly as nccl-tests (and tern's all_reduce_perf) do, so the tools
      // compare like with like: 0 rank 0's, 1 the average over ranks (the default), 2 the minimum, 3 the maximum.
      const double local_sec = (t1 - t0) / o.iters;
      double sum_sec = 0, min_sec = 0, max_sec = 0, rank0_sec = local_sec;
      MPI_Allreduce(&local_sec, &sum_sec, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      MPI_Allreduce(&local_sec, &min_sec, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
      MPI_Allreduce(&local_sec, &max_sec, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      MPI_Bcast(&rank0_sec, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      const double sec = o.average == 0 ? rank0_sec : o.average == 2 ? min_sec : o.average == 3 ? max_sec : sum_sec / n;
      long local_wrong = std::max(wrong, 0L);
      long total = 0;
      MPI_Allreduce(&local_wrong, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);

      const double algbw = static_cast<double>(count * sizeof(float)) / 1e9 / sec;
      Record r{count * sizeof(float), count, sec * 1e6, algbw, algbw * bus_factor, o.check ? total : -1, {}};
      records.push_back(r);
      busbw_sum += r.busbw;
      if (rank == 0) {
        std::printf("%12zu  %12zu  %8s  %6s  %7s  %6.2f  %6.2f  %5s\n", r.bytes, r.count, "float", "sum",
                    FormatTime(r.time_us).c_str(), r.algbw, r.busbw,
                    r.wrong < 0 ? "N/A" : std::to_string(r.wrong).c_str());
        std::fflush(stdout);
      }
    }
    const size_t next = static_cast<size_t>(static_cast<double>(bytes) * o.step_factor);
    bytes = next > bytes ? next : bytes + 1;
  }

  long total_wrong = 0;
  for (const auto& r : records) total_wrong += std::max(r.wrong, 0L);
  if (rank == 0) {
    std::printf("# Out of bounds values : %ld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
    std::printf("# Avg bus bandwidth    : %g\n", records.empty() ? 0.0 : busbw_sum / records.size());
    std::printf("#\n");
    if (!o.json.empty()) WriteJson("mpi_allreduce", o.json, records);
  }
  return total_wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Parse before MPI_Init so --help works without a launcher; every rank parses the same argv.
  Options o;
  CLI::App app{"MPI_Allreduce (float32 sum), nccl-tests style table"};
  app.add_option("-b,--minbytes", o.min_bytes, "smallest message, bytes (K/M/G suffixes)")->capture_default_str();
  app.add_option("-e,--maxbytes", o.max_bytes, "largest message, bytes (K/M/G suffixes)")->capture_default_str();
  app.add_option("-f,--stepfactor", o.step_factor, "multiply the size by this each step")->capture_default_str();
  app.add_option("-n,--iters", o.iters, "timed iterations per size")->capture_default_str();
  app.add_option("-w,--warmup_iters", o.warmup, "untimed iterations per size")->capture_default_str();
  app.add_option("-c,--check", o.check, "verify the result once per size (0/1)")->capture_default_str();
  app.add_option("-a,--average", o.average, "time reported: 0 rank 0, 1 average, 2 min, 3 max across ranks")
      ->capture_default_str()
      ->check(CLI::Range(0, 3));
  app.add_flag("--inplace", o.inplace, "use MPI_IN_PLACE instead of separate send/recv buffers");
  app.add_option("-J,--json", o.json, "also write the rows as a JSON list (rank 0)");
  CLI11_PARSE(app, argc, argv);
  if (o.iters < 1 || o.warmup < 0) {
    std::fprintf(stderr, "mpi_allreduce: -n must be >= 1 and -w >= 0\n");
    return 2;
  }

  MPI_Init(&argc, &argv);
  int rank = 0;
  int n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const int rc = Run(o, rank, n);
  MPI_Finalize();
  return rc;
}
