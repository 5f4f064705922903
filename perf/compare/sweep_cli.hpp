// The command line the collectives drivers share (mpi_collectives, oneccl_collectives, gloo_collectives and
// tern_alltoallv): the collective and nccl-tests' sweep options, checked and turned into the SweepOptions of
// collectives.hpp. Header-only and free of tern, as collectives.hpp.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "collectives.hpp"

namespace tern::compare {

// What was typed, before it is checked.
struct SweepArgs {
  std::string coll = "allreduce";
  std::string min_bytes = "8";
  std::string max_bytes = "256M";
};

// -b -e -f -n -w -c -a -J, and where inplace_help is given (a driver of several collectives) also --coll, -r and
// --inplace, the latter described by inplace_help (what in place means in that library).
inline void AddSweepOptions(CLI::App& app, SweepOptions& o, SweepArgs& a, const char* inplace_help) {
  if (inplace_help != nullptr) app.add_option("--coll", a.coll, CollNames())->capture_default_str();
  app.add_option("-b,--minbytes", a.min_bytes, "smallest message, bytes (K/M/G suffixes)")->capture_default_str();
  app.add_option("-e,--maxbytes", a.max_bytes, "largest message, bytes (K/M/G suffixes)")->capture_default_str();
  app.add_option("-f,--stepfactor", o.step_factor, "multiply the size by this each step")->capture_default_str();
  app.add_option("-n,--iters", o.iters, "timed iterations per size")->capture_default_str();
  app.add_option("-w,--warmup_iters", o.warmup, "untimed iterations per size")->capture_default_str();
  app.add_option("-c,--check", o.check, "verify the result once per size (0/1)")->capture_default_str();
  app.add_option("-a,--average", o.average, "time reported: 0 rank 0, 1 average, 2 min, 3 max across ranks")
      ->capture_default_str()
      ->check(CLI::Range(0, 3));
  if (inplace_help != nullptr) {
    app.add_option("-r,--root", o.root, "root rank (broadcast, reduce)")->capture_default_str();
    app.add_flag("--inplace", o.inplace, inplace_help);
  }
  app.add_option("-J,--json", o.json, "also write the rows as a JSON list (rank 0)");
}

// Checks what was typed and fills o's collective and sizes (o.coll stays as it is when the driver has no --coll).
// Returns the problem, "" when there is none. The root is checked against the rank count by RootProblem.
inline std::string FinishSweepOptions(SweepOptions& o, const SweepArgs& a, bool has_coll_option) {
  const auto info = has_coll_option ? FindColl(a.coll) : std::optional<CollInfo>(o.coll);
  const auto lo = ParseBytes(a.min_bytes);
  const auto hi = ParseBytes(a.max_bytes);
  if (!info) return "unknown --coll " + a.coll + " (" + CollNames() + ")";
  if (!lo || !hi || *lo > *hi || o.step_factor <= 1.0) return "bad size range -b " + a.min_bytes + " -e " + a.max_bytes;
  if (o.iters < 1 || o.warmup < 0) return "-n must be >= 1 and -w >= 0";
  if (o.inplace && info->coll != Coll::kAllReduce) return "--inplace is for allreduce only";
  o.coll = *info;
  o.min_bytes = *lo;
  o.max_bytes = *hi;
  return "";
}

// "" when the root fits n ranks (or the collective has none), else the problem.
inline std::string RootProblem(const SweepOptions& o, int n) {
  if (!o.coll.has_root || (o.root >= 0 && o.root < n)) return "";
  return "root " + std::to_string(o.root) + " out of range for " + std::to_string(n) + " ranks";
}

}  // namespace tern::compare
