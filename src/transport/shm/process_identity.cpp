#include "transport/shm/process_identity.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <random>

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

bool cmaRead(pid_t pid, void* local, uint64_t remote, size_t bytes) {
  char* dst = static_cast<char*>(local);
  while (bytes > 0) {
    iovec l{dst, bytes};
    iovec r{reinterpret_cast<void*>(remote), bytes};
    ssize_t n = ::process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = EFAULT;
      return false;
    }
    dst += n;
    remote += static_cast<uint64_t>(n);
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool cmaWrite(pid_t pid, uint64_t remote, const void* local, size_t bytes) {
  const char* src = static_cast<const char*>(local);
  while (bytes > 0) {
    iovec l{const_cast<char*>(src), bytes};
    iovec r{reinterpret_cast<void*>(remote), bytes};
    ssize_t n = ::process_vm_writev(pid, &l, 1, &r, 1, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = EFAULT;
      return false;
    }
    src += n;
    remote += static_cast<uint64_t>(n);
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool cmaProbe(pid_t pid, uint64_t probeAddr, uint64_t cookie) {
  uint64_t value = 0;
  return cmaRead(pid, &value, probeAddr, sizeof(value)) && value == cookie;
}

}  // namespace tern::shm
