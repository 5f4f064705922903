#include "core/env_init.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "base/env.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "transport/bootstrap.hpp"

namespace tern {

namespace {

// A launcher's variable (no TERN_ prefix) through launcherVariable, or a TERN_ one through the knobs table; unset
// and empty are nullopt.
std::optional<std::string> get(const char* name) {
  if (std::strncmp(name, "TERN_", 5) == 0) return envString(name + 5);
  const char* v = launcherVariable(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

// A launcher's rank or size variable (torchrun, Open MPI, PMI, Slurm): the knobs table does not declare those.
int toInt(const char* name, const char* value) {
  char* end = nullptr;
  long v = std::strtol(value, &end, 10);
  if (end == value || *end != '\0' || v < 0 || v > (1 << 24)) {
    throwError(ternInvalidArgument, "environment: %s=%s is not a valid number", name, value);
  }
  return static_cast<int>(v);
}

// rankVar's value: TERN_ ones range-checked by the knobs table (ternInvalidUsage naming the range, as every knob),
// the launchers' own by toInt.
int rankValue(const char* var, const std::string& value) {
  if (std::strncmp(var, "TERN_", 5) == 0) return static_cast<int>(envInt(var + 5, -1));
  return toInt(var, value.c_str());
}

bool readPair(LaunchEnv& e, const char* rankVar, const char* sizeVar, const char* launcher) {
  const std::optional<std::string> r = get(rankVar), s = get(sizeVar);
  if (!r || !s) return false;
  e.rank = rankValue(rankVar, *r);
  e.size = rankValue(sizeVar, *s);
  e.launcher = launcher;
  return true;
}

// Every rank of this job is on this host: the root is on loopback, or the launcher says all ranks are local.
bool singleHost(const LaunchEnv& e) {
  if (e.rootAddress.isLoopback()) return true;
  auto equalsSize = [&](const char* var) {
    const std::optional<std::string> v = get(var);
    return v && rankValue(var, *v) == e.size;
  };
  if (e.launcher == "tern-run") return equalsSize("TERN_LOCAL_SIZE");
  if (e.launcher == "torchrun") return equalsSize("LOCAL_WORLD_SIZE");
  if (e.launcher == "openmpi") return equalsSize("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (e.launcher == "pmi") return equalsSize("MPI_LOCALNRANKS");
  if (e.launcher == "slurm") {
    std::optional<std::string> nodes = get("SLURM_STEP_NUM_NODES");
    if (!nodes) nodes = get("SLURM_NNODES");
    return nodes == "1" || equalsSize("SLURM_NTASKS_PER_NODE");
  }
  return false;
}

// What every rank of this job sees alike: the root and the launcher's job ids.
std::string jobSeed(const std::string& root, int size) {
  std::string seed = root + "/" + std::to_string(size);
  for (const char* v :
       {"TORCHELASTIC_RUN_ID", "OMPI_MCA_ess_base_jobid", "SLURM_JOB_ID", "SLURM_STEP_ID", "PMI_JOBID"}) {
    if (const std::optional<std::string> x = get(v)) seed += "/" + *x;
  }
  return seed;
}

std::string trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string readSmallFile(int fd, const std::string& path) {
  char buf[256];
  std::string out;
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throwSystemError(("read " + path).c_str());
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > 4096) throwError(ternInvalidArgument, "%s is too large for a secret file", path.c_str());
  }
  return out;
}

Secret secretFromFile(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throwSystemError(("TERN_SECRET_FILE: open " + path).c_str());
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && (st.st_mode & 077) != 0) {
    TERN_LOG(kWarn, kInit, -1, "TERN_SECRET_FILE %s can be read by other users (mode %03o): chmod 600 it", path.c_str(),
             static_cast<unsigned>(st.st_mode & 0777));
  }
  std::string text = trimmed(readSmallFile(fd.get(), path));
  try {
    return Secret::fromHex(text);
  } catch (const Error&) {
    throwError(ternInvalidArgument, "TERN_SECRET_FILE %s must hold 32 hex digits (128 bits)", path.c_str());
  }
}

// The per-user directory that holds single-host jobs' secret files: ours, and closed to everyone else.
std::string privateDirectory() {
  std::string dir = get("TMPDIR").value_or("/tmp") + "/tern-" + std::to_string(::geteuid());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throwSystemError(("mkdir " + dir).c_str());
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) throwSystemError(("stat " + dir).c_str());
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    throwError(ternInvalidUsage,
               "%s is not a directory private to this user (owner, mode or a symlink): cannot hand the job its "
               "secret through it; remove it, or set TERN_SECRET",
               dir.c_str());
  }
  return dir;
}

// A single-host job without a given secret: rank 0 draws one and leaves it in a file only this user can read; the
// other ranks read it there. Rank 0's bootstrap root deletes the file once everyone has joined.
Secret localJobSecret(const LaunchEnv& e, const std::string& root) {
  const std::string seed = jobSeed(root, e.size);
  uint64_t h = 1469598103934665603ull;  // FNV-1a: only names the file, the secret is random
  for (unsigned char c : seed) h = (h ^ c) * 1099511628211ull;
  char name[64];
  std::snprintf(name, sizeof(name), "/job-%016llx.secret", static_cast<unsigned long long>(h));
  const std::string path = privateDirectory() + name;
  if (e.rank == 0) {
    Secret s = Secret::random();
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) throwSystemError(("create " + tmp).c_str());
    const std::string text = std::to_string(::getpid()) + " " + s.hex() + "\n";
    if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      throwSystemError(("write " + tmp).c_str());
    }
    fd.reset();
    if (::rename(tmp.c_str(), path.c_str()) != 0) throwSystemError(("rename " + tmp).c_str());
    removeFileWhenNextRootIsDone(path);
    return s;
  }
  const auto deadline = Clock::now() + std::chrono::seconds(knobs().timeoutSec);
  for (;;) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (fd) {
      struct stat st {};
      if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077)) {
        throwError(ternInvalidUsage, "%s is not a private file of this user: not using it as the job secret",
                   path.c_str());
      }
      std::string text = readSmallFile(fd.get(), path);
      long writer = 0;
      char hex[33] = {};
      if (std::sscanf(text.c_str(), "%ld %32s", &writer, hex) == 2 && writer > 0) {
        // A file left behind by a rank 0 that died is not this job's: wait for this job's rank 0 to replace it.
        if (::kill(static_cast<pid_t>(writer), 0) == 0 || errno == EPERM) return Secret::fromHex(hex);
      }
    }
    if (Clock::now() >= deadline) {
      throwError(ternTimeout,
                 "ternCommInitFromEnv: rank %d waited TERN_TIMEOUT for rank 0 to leave the job secret in %s (ranks "
                 "of a single-host job share it that way); are all ranks on this host with the same TMPDIR? "
                 "Otherwise set TERN_SECRET (see docs/SECURITY.md)",
                 e.rank, path.c_str());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Secret jobSecret(const LaunchEnv& e, const std::string& root) {
  if (auto s = envString("SECRET")) return Secret::fromHex(*s);
  if (auto f = envString("SECRET_FILE")) return secretFromFile(*f);
  if (envFlag("INSECURE", false)) {
    TERN_LOG(kWarn, kInit, e.rank,
             "TERN_INSECURE=1: the job secret is derived from public values (root %s, job ids): anyone who can "
             "reach the root or a rank's port can join this job. Use only on a trusted test network.",
             root.c_str());
    const std::string seed = jobSeed(root, e.size);
    Secret s;
    size_t h1 = std::hash<std::string>{}(seed), h2 = std::hash<std::string>{}(seed + "#tern");
    std::memcpy(s.bytes, &h1, 8);
    std::memcpy(s.bytes + 8, &h2, 8);
    return s;
  }
  if (singleHost(e)) return localJobSecret(e, root);
  throwError(ternInvalidUsage,
             "ternCommInitFromEnv: rank %d: no job secret, and the job spans hosts (root %s): without one anyone who "
             "can reach the root's port could join it. Give every rank the same 32 hex digits: TERN_SECRET (e.g. "
             "export TERN_SECRET=$(openssl rand -hex 16) before mpirun -x TERN_SECRET or srun), TERN_SECRET_FILE=PATH "
             "(a file of the user's on a shared filesystem), or tern-run --secret-file PATH; TERN_INSECURE=1 "
             "derives one from public values, for trusted test networks only (docs/SECURITY.md)",
             e.rank, root.c_str());
}

}  // namespace

const char* launcherVariable(const char* name) {
  if (std::strncmp(name, "TERN_", 5) == 0) {
    throwError(ternInternalError, "%s is tern's own: read it through the knobs table (src/base/env.cpp)", name);
  }
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

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
    if (const std::optional<std::string> x = get(v)) {
      e.localRank = rankValue(v, *x);
      break;
    }
  }
  std::string root;
  if (const std::optional<std::string> a = get("TERN_ROOT_ADDR")) {
    root = *a;
  } else if (const std::optional<std::string> m = get("MASTER_ADDR")) {
    int port = 0;
    if (get("TERN_ROOT_PORT")) {
      port = static_cast<int>(envInt("ROOT_PORT", 0));  // range-checked (1..65535) by the knobs table
    } else if (const std::optional<std::string> mp = get("MASTER_PORT")) {
      port = toInt("MASTER_PORT", mp->c_str()) + 1;
    } else {
      throwError(ternInvalidArgument,
                 "ternCommInitFromEnv: MASTER_ADDR is set but neither MASTER_PORT nor TERN_ROOT_PORT");
    }
    root = *m + ":" + std::to_string(port);
  } else {
    std::optional<std::string> localSize = get("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (!localSize) localSize = get("SLURM_NTASKS_PER_NODE");
    if (localSize && toInt("local size", localSize->c_str()) == e.size) {
      root = "127.0.0.1:29517";
    } else {
      throwError(ternInvalidArgument,
                 "ternCommInitFromEnv: where is the root? set TERN_ROOT_ADDR=host:port (or MASTER_ADDR/MASTER_PORT)");
    }
  }
  e.rootAddress = SocketAddress::parse(root);
  e.secret = jobSecret(e, root);
  return e;
}

}  // namespace tern
