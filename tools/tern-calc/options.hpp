// tern-calc's command line: what to price (a topology: preset, file or flags), what collective and sizes, and the
// modes (sizes, training, calibration, check).
#pragma once

#include <string>
#include <vector>

namespace tern::calc {

struct Options {
  // Topology.
  std::string preset;
  std::string topoFile;
  int nodes = 0;
  int ranksPerNode = 0;
  int nicsPerNode = 0;
  std::string intra;
  std::string inter;
  // What to price.
  std::string collective = "allreduce";
  std::vector<std::string> sizes;
  std::string sweep;
  std::string algo;
  std::string compress;
  std::string dtype = "float";
  std::string chunk;
  std::string tune;
  bool json = false;
  bool list = false;
  // Training mode.
  std::string modelParams;
  std::string gradDtype = "fp32";
  double computeMs = -1;
  double overlap = 0;
  double gpuHourPrice = -1;
  int maxNodes = 0;
  // Calibration and checking.
  std::vector<std::string> calibrate;
  std::vector<std::string> check;
  std::string output;
  std::string minSize;
};

// Parses argv. Returns -1 to go on, or the exit code (0 after --help, 2 after a usage error, which it reports as
// one line on stderr).
int parseOptions(int argc, char** argv, Options& o);

}  // namespace tern::calc
