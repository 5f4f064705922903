// tern-calc: the cost-model calculator. Prices collectives on a topology (a preset, a topology file or a few
// flags) with the same model the library selects algorithms with, explains the numbers (closed forms, the
// bottleneck link, crossovers), answers data-parallel training what-ifs, and fits the model to perf measurements.
//
// Exit codes: 0 success, 2 bad input (unknown preset, bad size or unit, malformed file), with one line on stderr.
#include <cstdio>

#include "algorithms/registry.hpp"
#include "calibrate_report.hpp"
#include "base/error.hpp"
#include "options.hpp"
#include "planner/cluster_spec.hpp"
#include "setup.hpp"
#include "size_report.hpp"
#include "training_report.hpp"

namespace {

void printList() {
  std::printf("presets (--preset NAME, NAMExN for N nodes):\n");
  for (const tern::planner::Preset& p : tern::planner::presets()) std::printf("  %-18s %s\n", p.name, p.description);
  std::printf("\nalgorithms (--algo NAME, TERN_ALGO; compressed ones: --compress CODEC, TERN_COMPRESS):\n");
  for (const tern::AlgorithmInfo& a : tern::catalogue()) {
    if (a.collective == tern::Collective::kPointToPoint) continue;
    std::printf("  %-14s %-24s %-14s %s\n", tern::collectiveName(a.collective), a.name,
                tern::algorithmFamilyName(a.family), a.description);
  }
}

int run(const tern::calc::Options& o) {
  using namespace tern::calc;
  if (o.list) {
    printList();
    return 0;
  }
  if (!o.calibrate.empty()) return runCalibrate(o);
  if (!o.check.empty()) return runCheck(o);
  const Setup s = resolveSetup(o);
  if (!o.modelParams.empty()) return runTrainingReport(o, s);
  return runSizeReport(o, s);
}

}  // namespace

int main(int argc, char** argv) {
  tern::calc::Options o;
  const int parsed = tern::calc::parseOptions(argc, argv, o);
  if (parsed >= 0) return parsed;
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    for (char& c : msg) {
      if (c == '\n') c = ' ';
    }
    std::fprintf(stderr, "tern-calc: %s\n", msg.c_str());
    return 2;
  }
}
