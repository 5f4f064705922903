#include "transport/shm/process_identity.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

namespace tern::shm {

namespace {

uint64_t randomWord() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace

const ProcessIdentity& processIdentity() {
  static volatile uint64_t probeWord = 0;
  static const ProcessIdentity id = [] {
    ProcessIdentity p{};
    p.token = randomWord() | 1;  // never 0, so an unset header never matches
    p.cmaCookie = randomWord();
    probeWord = p.cmaCookie;
    p.cmaProbe = &probeWord;
    return p;
  }();
  return id;
}

namespace {

// process_vm_readv or process_vm_writev of bytes between local and remote, resuming after partial transfers.
template <class Syscall>
bool cmaTransfer(Syscall call, pid_t pid, char* local, uint64_t remote, size_t bytes) {
  while (bytes > 0) {
    iovec l{local, bytes};
    iovec r{reinterpret_cast<void*>(remote), bytes};
    ssize_t n = call(pid, &l, 1, &r, 1, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = EFAULT;
      return false;
    }
    local += n;
    remote += static_cast<uint64_t>(n);
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

bool cmaRead(pid_t pid, void* local, uint64_t remote, size_t bytes) {
  return cmaTransfer(::process_vm_readv, pid, static_cast<char*>(local), remote, bytes);
}

bool cmaWrite(pid_t pid, uint64_t remote, const void* local, size_t bytes) {
  // process_vm_writev only reads the local iovec; the cast is for the shared iovec type.
  return cmaTransfer(::process_vm_writev, pid, const_cast<char*>(static_cast<const char*>(local)), remote, bytes);
}

bool cmaProbe(pid_t pid, uint64_t probeAddr, uint64_t cookie) {
  uint64_t value = 0;
  return cmaRead(pid, &value, probeAddr, sizeof(value)) && value == cookie;
}

ProcessState processState(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(static_cast<long>(pid)) + "/stat";
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return errno == ENOENT || errno == ESRCH ? ProcessState::kGone : ProcessState::kRunning;
  char buf[512];
  const size_t got = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[got] = '\0';
  // "pid (comm) S ...": comm may hold spaces and parentheses, so the state follows the last ')'.
  const char* close = std::strrchr(buf, ')');
  if (close == nullptr || close[1] != ' ') return ProcessState::kRunning;
  switch (close[2]) {
    case 'Z':
    case 'X':
    case 'x':
      return ProcessState::kGone;
    case 'T':
    case 't':
      return ProcessState::kStopped;
    default:
      return ProcessState::kRunning;
  }
}

}  // namespace tern::shm
