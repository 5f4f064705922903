#include "core/env_init.hpp"

#include <cstdlib>
#include <cstring>
#include <functional>

#include "core/env.hpp"
#include "core/error.hpp"

namespace tern {

namespace {

const char* get(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

int toInt(const char* name, const char* value) {
  char* end = nullptr;
  long v = std::strtol(value, &end, 10);
  if (end == value || *end != '\0' || v < 0 || v > (1 << 24)) {
    throwError(ternInvalidArgument, "environment: %s=%s is not a valid number", name, value);
  }
  return static_cast<int>(v);
}

bool readPair(LaunchEnv& e, const char* rankVar, const char* sizeVar, const char* launcher) {
  const char* r = get(rankVar);
  const char* s = get(sizeVar);
  if (r == nullptr || s == nullptr) return false;
  e.rank = toInt(rankVar, r);
  e.size = toInt(sizeVar, s);
  e.launcher = launcher;
  return true;
}

}  // namespace

LaunchEnv readLaunchEnv() {
  LaunchEnv e;
  bool found = readPair(e, "TERN_RANK", "TERN_WORLD_SIZE", "tern-run") ||
               readPair(e, "RANK", "WORLD_SIZE", "torchrun") ||
               readPair(e, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "openmpi") ||
               readPair(e, "PMI_RANK", "PMI_SIZE", "pmi") || readPair(e, "SLURM_PROCID", "SLURM_NTASKS", "slurm");
  if (!found) {
    throwError(ternInvalidArgument,
               "ternCommInitFromEnv: no launcher environment found (set TERN_RANK and TERN_WORLD_SIZE, or run under "
               "tern-run, torchrun, mpirun or srun)");
  }
  if (e.size < 1 || e.rank >= e.size) {
    throwError(ternInvalidArgument, "ternCommInitFromEnv: rank %d does not fit world size %d", e.rank, e.size);
  }
  for (const char* v : {"TERN_LOCAL_RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}) {
    if (get(v) != nullptr) {
      e.localRank = toInt(v, get(v));
      break;
    }
  }
  std::string root;
  if (const char* a = get("TERN_ROOT_ADDR")) {
    root = a;
  } else if (const char* m = get("MASTER_ADDR")) {
    int port = 0;
    if (const char* p = get("TERN_ROOT_PORT")) {
      port = toInt("TERN_ROOT_PORT", p);
    } else if (const char* mp = get("MASTER_PORT")) {
      port = toInt("MASTER_PORT", mp) + 1;
    } else {
      throwError(ternInvalidArgument,
                 "ternCommInitFromEnv: MASTER_ADDR is set but neither MASTER_PORT nor TERN_ROOT_PORT");
    }
    root = std::string(m) + ":" + std::to_string(port);
  } else {
    const char* localSize = get("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (localSize == nullptr) localSize = get("SLURM_NTASKS_PER_NODE");
    if (localSize != nullptr && toInt("local size", localSize) == e.size) {
      root = "127.0.0.1:29517";
    } else {
      throwError(ternInvalidArgument,
                 "ternCommInitFromEnv: where is the root? set TERN_ROOT_ADDR=host:port (or MASTER_ADDR/MASTER_PORT)");
    }
  }
  e.rootAddress = SocketAddress::parse(root);
  if (auto s = envString("SECRET")) {
    e.secret = Secret::fromHex(*s);
  } else {
    // No shared secret was handed out: derive one from what every rank of this job sees alike.
    std::string seed = root;
    for (const char* v : {"TORCHELASTIC_RUN_ID", "OMPI_MCA_ess_base_jobid", "SLURM_JOB_ID", "PMI_JOBID"}) {
      if (const char* x = get(v)) seed += std::string("/") + x;
    }
    size_t h1 = std::hash<std::string>{}(seed), h2 = std::hash<std::string>{}(seed + "#tern");
    std::memcpy(e.secret.bytes, &h1, 8);
    std::memcpy(e.secret.bytes + 8, &h2, 8);
  }
  return e;
}

}  // namespace tern
