// Command line of tern-run: what the user asked for, validated, before anything is started.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cpu_binding.hpp"

namespace tern::run {

// Exit code for a bad command line (including a program that cannot be found), as with most Unix tools.
inline constexpr int kUsageExitCode = 2;

struct Options {
  int nprocs = 0;                        // ranks this invocation starts
  int rank_offset = 0;                   // global rank of the first of them (--rank-offset)
  int rank_stride = 1;                   // their global ranks: rank_offset + i * rank_stride (--rank-stride)
  int world_size = 0;                    // ranks in the whole job (--world-size; default: highest rank + 1)
  std::optional<std::string> root_addr;  // HOST:PORT; unset means "find a free local port"
  std::optional<std::string> secret;     // 32 lowercase hex digits (--secret or --secret-file); unset: make a fresh one
  std::vector<std::pair<std::string, std::string>> extra_env;  // from -x NAME=VALUE, in command-line order
  bool tag_output = true;
  int grace_ms = 3000;
  std::optional<double> timeout_s;
  BindTo bind_to = BindTo::kAuto;    // --bind-to
  std::vector<std::string> command;  // program and its arguments, never empty once parsed
};

// Either parsed options, or the exit code tern-run must return right away (0 after --help, 2 after bad usage; the
// message has already been printed).
struct ParseOutcome {
  std::optional<Options> options;
  int exit_code = 0;
};

ParseOutcome ParseOptions(int argc, char** argv);

}  // namespace tern::run
