// tern-run: starts the ranks of a tern job on this machine, like mpirun or torchrun. See --help for the contract.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <system_error>

#include "options.hpp"
#include "program_path.hpp"
#include "rank_env.hpp"
#include "root_addr.hpp"
#include "secret.hpp"
#include "signal_channel.hpp"
#include "spawn.hpp"
#include "supervisor.hpp"
#include "unique_fd.hpp"

namespace tern::run {
namespace {

constexpr int kLauncherErrorExitCode = 1;

// If tern-run was started with fd 0, 1 or 2 closed, the first pipe would land on one of them and a rank's output
// would be confused with ours; park /dev/null there instead.
void EnsureStandardFds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0) ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
  }
}

// The PATH the ranks will run with, which -x may have changed: it decides which program they would execute.
std::string RanksPath(const Options& opts) {
  std::string path;
  if (const char* inherited = std::getenv("PATH"))
    path = inherited;
  else
    path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& [name, value] : opts.extra_env) {
    if (name == "PATH") path = value;
  }
  return path;
}

int Launch(const Options& opts) {
  const std::string& program = opts.command.front();
  std::optional<std::string> resolved = ResolveProgram(program, RanksPath(opts));
  if (!resolved) {
    if (program.find('/') != std::string::npos) {
      std::fprintf(stderr, "tern-run: not an executable file: %s\n", program.c_str());
    } else {
      std::fprintf(stderr, "tern-run: program not found in PATH: %s\n", program.c_str());
    }
    return kUsageExitCode;
  }

  JobContract contract;
  contract.world_size = opts.world_size;
  contract.local_size = opts.nprocs;
  contract.rank_offset = opts.rank_offset;
  contract.rank_stride = opts.rank_stride;
  // Held until tern-run exits, so the port stays rank 0's (root_addr.hpp).
  LoopbackRootReservation reserved_root;
  if (opts.root_addr) {
    contract.root_addr = *opts.root_addr;
  } else {
    reserved_root = ReserveLoopbackRootAddr();
    contract.root_addr = reserved_root.addr;
  }
  contract.secret = opts.secret ? *opts.secret : RandomSecretHex();
  RankEnvironment env(CurrentEnvironment(), opts.extra_env, contract);

  UniqueFd dev_null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!dev_null.valid()) throw std::system_error(errno, std::generic_category(), "open /dev/null");

  SignalChannel signals;
  SupervisorConfig config;
  config.world_size = opts.world_size;  // output tags show global ranks, padded to the job's width
  config.nprocs = opts.nprocs;
  config.tag_output = opts.tag_output;
  config.grace = std::chrono::milliseconds(opts.grace_ms);
  if (opts.timeout_s) config.timeout = std::chrono::duration<double>(*opts.timeout_s);
  Supervisor supervisor(config, &signals);

  const std::vector<int> cpus = CpusForRanks(opts.bind_to, opts.nprocs, opts.nprocs == opts.world_size, UsableCpus());
  for (int local = 0; local < opts.nprocs; ++local) {
    const int cpu = cpus.empty() ? -1 : cpus[static_cast<size_t>(local)];
    int rank = opts.rank_offset + local * opts.rank_stride;
    try {
      supervisor.AddRank(rank, SpawnProcess(*resolved, opts.command, env.ForRank(local), dev_null.get(), signals, cpu));
    } catch (const std::system_error& e) {
      supervisor.Abort(kLauncherErrorExitCode, "cannot start rank " + std::to_string(rank) + ": " + e.what());
      break;
    }
  }
  return supervisor.Run();
}

}  // namespace
}  // namespace tern::run

int main(int argc, char** argv) {
  tern::run::EnsureStandardFds();
  tern::run::ParseOutcome parsed = tern::run::ParseOptions(argc, argv);
  if (!parsed.options) return parsed.exit_code;
  try {
    return tern::run::Launch(*parsed.options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tern-run: %s\n", e.what());
    return tern::run::kLauncherErrorExitCode;
  }
}
