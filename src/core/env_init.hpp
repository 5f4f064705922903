// Reading a launcher's environment: who am I, how many are we, where is the root, what is the job secret.
#pragma once

#include <string>

#include "core/socket.hpp"
#include "core/unique_id.hpp"

namespace tern {

struct LaunchEnv {
  int rank = -1;
  int size = 0;
  int localRank = -1;
  SocketAddress rootAddress;
  Secret secret;
  std::string launcher;  // "tern-run", "torchrun", "openmpi", "slurm", "pmi"
};

// Order of precedence: TERN_RANK/TERN_WORLD_SIZE (tern-run, or explicit overrides), torchrun (RANK, WORLD_SIZE),
// Open MPI (OMPI_COMM_WORLD_RANK/SIZE), PMI (PMI_RANK/PMI_SIZE), Slurm (SLURM_PROCID/SLURM_NTASKS).
// Root: TERN_ROOT_ADDR, else MASTER_ADDR with TERN_ROOT_PORT or MASTER_PORT+1 (torchrun's own store already
// uses MASTER_PORT), else 127.0.0.1:29517 when every rank is on this node. Secret: TERN_SECRET (32 hex digits),
// else derived from the root address and the launcher's job id (weaker: say so in docs).
// Throws ternInvalidArgument naming what is missing.
LaunchEnv readLaunchEnv();

}  // namespace tern
