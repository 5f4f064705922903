// Reading a launcher's environment: who am I, how many are we, where is the root, what is the job secret.
#pragma once

#include <string>

#include "base/socket.hpp"
#include "base/unique_id.hpp"

namespace tern {

struct LaunchEnv {
  int rank = -1;
  int size = 0;
  int localRank = -1;
  SocketAddress rootAddress;
  Secret secret;
  std::string launcher;  // "tern-run", "torchrun", "openmpi", "slurm", "pmi"
};

// Another program's variable (a launcher's: RANK, OMPI_COMM_WORLD_SIZE, SLURM_*, MASTER_ADDR, TMPDIR): its value, or
// nullptr when unset or empty. The one place tern reads variables it does not declare; a TERN_ name is an internal
// error (those are knobs, base/env.hpp).
const char* launcherVariable(const char* name);

// Order of precedence: TERN_RANK/TERN_WORLD_SIZE (tern-run, or explicit overrides), torchrun (RANK, WORLD_SIZE),
// Open MPI (OMPI_COMM_WORLD_RANK/SIZE), PMI (PMI_RANK/PMI_SIZE), Slurm (SLURM_PROCID/SLURM_NTASKS).
// Root: TERN_ROOT_ADDR, else MASTER_ADDR with TERN_ROOT_PORT or MASTER_PORT+1 (torchrun's own store already
// uses MASTER_PORT), else 127.0.0.1:29517 when every rank is on this node. Secret: TERN_SECRET (32 hex digits),
// else TERN_SECRET_FILE (a file holding them), else with TERN_INSECURE=1 one derived from the root address and the
// launcher's job ids (public: logged as a warning), else, when every rank is on this host, a random one that rank 0
// leaves for the others in a file private to the user; a job spanning hosts without a secret is refused
// (ternInvalidUsage saying how to give one; docs/SECURITY.md).
// Throws ternInvalidArgument naming what is missing.
LaunchEnv readLaunchEnv();

}  // namespace tern
