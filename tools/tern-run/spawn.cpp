#include "spawn.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace tern::run {
namespace {

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

// Both ends close on exec, so ranks never inherit each other's pipes (which would hide EOF); the child's dup2
// onto 1 and 2 clears the flag for the copies it keeps.
Pipe MakePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  Pipe p{UniqueFd(fds[0]), UniqueFd(fds[1])};
  ::fcntl(p.read.get(), F_SETFL, ::fcntl(p.read.get(), F_GETFL) | O_NONBLOCK);
  return p;
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

void WriteAll(int fd, const char* text) {
  size_t len = std::strlen(text);
  while (len > 0) {
    ssize_t n = ::write(fd, text, len);
    if (n <= 0) return;
    text += n;
    len -= static_cast<size_t>(n);
  }
}

// Runs in the child between fork and exec: only async-signal-safe calls, no allocation.
[[noreturn]] void ExecChild(pid_t parent, const char* path, char* const* argv, char* const* envp, int stdin_fd,
                            int out_fd, int err_fd, const SignalChannel& signals, int cpu) {
  ::setpgid(0, 0);
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (::sched_setaffinity(0, sizeof(set), &set) != 0) WriteAll(err_fd, "tern-run: cannot bind rank to its CPU\n");
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);  // tern-run died before the death signal was armed
  if (::dup2(stdin_fd, STDIN_FILENO) < 0 || ::dup2(out_fd, STDOUT_FILENO) < 0 || ::dup2(err_fd, STDERR_FILENO) < 0) {
    ::_exit(126);
  }
  signals.RestoreForChild();
  ::execve(path, argv, envp);
  int error = errno;
  WriteAll(STDERR_FILENO, "tern-run: cannot execute ");
  WriteAll(STDERR_FILENO, path);
  WriteAll(STDERR_FILENO, ": ");
  WriteAll(STDERR_FILENO, ::strerror(error));
  WriteAll(STDERR_FILENO, "\n");
  ::_exit(error == ENOENT ? 127 : 126);
}

}  // namespace

SpawnedProcess SpawnProcess(const std::string& path, const std::vector<std::string>& argv,
                            const std::vector<std::string>& env, int stdin_fd, const SignalChannel& signals, int cpu) {
  Pipe out = MakePipe();
  Pipe err = MakePipe();
  std::vector<char*> c_argv = CStrings(argv);
  std::vector<char*> c_env = CStrings(env);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid == 0) {
    ExecChild(parent, path.c_str(), c_argv.data(), c_env.data(), stdin_fd, out.write.get(), err.write.get(), signals,
              cpu);
  }
  // Also set the group from this side: a signal sent to -pid right after fork must not miss a child that has not
  // run setpgid yet. EACCES (the child already exec'd) means the child did it itself.
  ::setpgid(pid, pid);
  return SpawnedProcess{pid, std::move(out.read), std::move(err.read)};
}

}  // namespace tern::run
