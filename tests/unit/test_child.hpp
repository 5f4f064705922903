// Running one case of this gtest binary in a child process (/proc/self/exe), for cases that need a fresh process:
// knobs such as TERN_ALGO are read once per process, and a rank that is a process of its own cannot be a thread.
#pragma once

#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tern/tern.h"

extern char** environ;

namespace tern::testing {

// Starts `gtestName` ("Suite.DISABLED_Case": child cases are disabled so that only their parent runs them) with this
// process's environment minus its TERN_* variables (TERN_SOCKET_IFNAME kept), plus extraEnv and `marker`=1, which
// the child case checks to know it runs as a child. -1 when the child cannot be started.
inline pid_t spawnTestChild(const std::string& gtestName, const std::string& marker,
                            const std::vector<std::string>& extraEnv) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "TERN_", 5) != 0 || std::strncmp(*e, "TERN_SOCKET_IFNAME=", 19) == 0) env.emplace_back(*e);
  }
  env.insert(env.end(), extraEnv.begin(), extraEnv.end());
  env.push_back(marker + "=1");
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string exe = "/proc/self/exe", filter = "--gtest_filter=" + gtestName,
              disabled = "--gtest_also_run_disabled_tests";
  char* argv[] = {exe.data(), filter.data(), disabled.data(), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp.data()) != 0) return -1;
  return pid;
}

// The child's exit code; -1 when it was not started or did not exit normally.
inline int waitTestChild(pid_t pid) {
  if (pid <= 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Starts one child of `gtestName` per entry of envPerChild (its extra variables), all at once (the ranks of one job),
// and returns their exit codes in the same order.
inline std::vector<int> runTestChildren(const std::string& gtestName, const std::string& marker,
                                        const std::vector<std::vector<std::string>>& envPerChild) {
  std::vector<pid_t> pids;
  pids.reserve(envPerChild.size());
  for (const std::vector<std::string>& env : envPerChild) pids.push_back(spawnTestChild(gtestName, marker, env));
  std::vector<int> codes;
  codes.reserve(pids.size());
  for (pid_t p : pids) codes.push_back(waitTestChild(p));
  return codes;
}

// A unique id as hex text, to hand to a child rank through its environment, and back.
inline std::string uniqueIdToHex(const ternUniqueId& id) {
  std::string hex;
  for (char ch : id.internal) {
    char two[3];
    std::snprintf(two, sizeof(two), "%02x", static_cast<unsigned char>(ch));
    hex += two;
  }
  return hex;
}

// False when hex is not the text of a unique id.
inline bool uniqueIdFromHex(const std::string& hex, ternUniqueId* id) {
  if (hex.size() != 2 * sizeof(id->internal)) return false;
  for (size_t i = 0; i < sizeof(id->internal); ++i) {
    id->internal[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  }
  return true;
}

// A child rank joins its job: the unique id from the environment variable idVariable (uniqueIdToHex), rank of
// nranks, every wait bounded by 30 s. Returns what ternCommInitRankConfig returned (ternInvalidArgument for a
// missing or malformed id).
inline ternResult_t initChildRank(const char* idVariable, int nranks, int rank, ternComm_t* comm) {
  const char* hex = std::getenv(idVariable);
  ternUniqueId id;
  if (hex == nullptr || !uniqueIdFromHex(hex, &id)) return ternInvalidArgument;
  ternConfig_t config = TERN_CONFIG_INITIALIZER;
  config.timeoutMs = 30000;
  return ternCommInitRankConfig(comm, nranks, id, rank, &config);
}

}  // namespace tern::testing
