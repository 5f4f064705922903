#include "transport/shm/segment_sweeper.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "base/env.hpp"

namespace tern::shm {

pid_t segmentCreator(const std::string& name) {
  const char* s = name.c_str();
  if (*s == '/') ++s;
  char tag[17] = {};
  int rank = -1, pid = -1, used = 0;
  unsigned counter = 0;
  if (std::sscanf(s, "tern-%16[0-9a-f]-r%d-p%d-%u%n", tag, &rank, &pid, &counter, &used) != 4) return -1;
  if (s[used] != '\0' || std::strlen(tag) != 16 || rank < 0 || pid <= 0) return -1;
  return static_cast<pid_t>(pid);
}

bool processGone(pid_t pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  // A zombie (killed, not yet reaped by its parent) still answers kill(0) but will never unlink anything.
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return errno == ENOENT;
  char buf[512];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* close = std::strrchr(buf, ')');  // the command name may hold spaces and parentheses
  if (close == nullptr || close[1] != ' ') return false;
  return close[2] == 'Z' || close[2] == 'X' || close[2] == 'x';
}

int sweepDeadSegments(const std::string& jobTag) {
  const std::string prefix = jobTag.empty() ? std::string("tern-") : "tern-" + jobTag + "-";
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return 0;
  const pid_t self = ::getpid();
  int alive = 0;
  while (dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const pid_t creator = segmentCreator(name);
    if (creator < 0 || creator == self) continue;  // not a tern segment; ours are unlinked by their Segment
    struct stat st {};
    if (::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) continue;
    if (processGone(creator)) {
      ::shm_unlink(("/" + name).c_str());
    } else {
      ++alive;
    }
  }
  ::closedir(dir);
  return alive;
}

void sweepJobAfterFailure(const std::string& jobTag, std::chrono::milliseconds wait) {
  const auto end = std::chrono::steady_clock::now() + wait;
  while (sweepDeadSegments(jobTag) > 0 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void setupKillPoint(int rank, const char* step) {
  const std::optional<std::string> spec = envString("TEST_SHM_KILL");
  if (!spec || spec->empty()) return;
  char* end = nullptr;
  const long victim = std::strtol(spec->c_str(), &end, 10);
  if (end == spec->c_str() || *end != ':' || victim != rank || std::strcmp(end + 1, step) != 0) return;
  std::fprintf(stderr, "tern test hook: rank %d SIGKILLs itself at shared-memory setup step '%s'\n", rank, step);
  std::fflush(stderr);
  ::raise(SIGKILL);
}

}  // namespace tern::shm
