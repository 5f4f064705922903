#include "wait_status.hpp"

#include <sys/wait.h>

#include <cstring>

namespace tern::run {

bool IsFailure(int wait_status) { return !WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0; }

std::string DescribeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with code " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    const char* name = ::strsignal(sig);
    std::string text = "killed by signal " + std::to_string(sig) + " (" + (name != nullptr ? name : "unknown");
    if (WCOREDUMP(wait_status)) text += ", core dumped";
    return text + ")";
  }
  return "ended with wait status " + std::to_string(wait_status);
}

int ExitCodeFor(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

}  // namespace tern::run
