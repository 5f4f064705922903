// Starting one rank: a child process with its stdout/stderr on pipes to tern-run and stdin on /dev/null.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "signal_channel.hpp"
#include "unique_fd.hpp"

namespace tern::run {

struct SpawnedProcess {
  pid_t pid = -1;
  UniqueFd out;  // read end of the child's stdout, non-blocking
  UniqueFd err;  // read end of the child's stderr, non-blocking
};

// Forks and executes path with argv and env. The child leads its own process group, so that tern-run can signal
// a rank together with anything it started (`sh -c` wrappers, helpers) and so that a terminal's Ctrl-C reaches
// ranks once, through tern-run, rather than twice. It is also killed if tern-run dies, so a SIGKILLed launcher
// leaves no orphaned ranks holding ports. If exec fails, the child reports why on its stderr and exits 127
// (not found) or 126 (not executable), as a shell would. Throws std::system_error if the fork itself fails.
// cpu >= 0 binds the child to that CPU before exec (a failure to bind is reported on its stderr, not fatal).
SpawnedProcess SpawnProcess(const std::string& path, const std::vector<std::string>& argv,
                            const std::vector<std::string>& env, int stdin_fd, const SignalChannel& signals,
                            int cpu = -1);

}  // namespace tern::run
