#include "transport/shm/buffer_registry.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <utility>

#include "base/log.hpp"
#include "transport/shm/intra_node_setup.hpp"

namespace tern {

namespace shm {
namespace {

struct Registration {
  uint64_t segId = 0;
  int fd = -1;  // -1: plain memory (memfd unavailable), freed with std::free
  uint64_t ino = 0;
  size_t bytes = 0;
  MappedFile file;  // the memfd's mapping (fd >= 0)
};

// Registered segments by base address. Lookups happen once per buffer per pipelined collective, so a mutex and a
// map are cheap enough.
struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, Registration> segments;
  std::atomic<size_t> live{0};  // segments.size(), readable without the mutex (classifyHostMemory's fast path)
  uint64_t nextId = 1;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: buffers may be freed from static destructors
  return *r;
}

int createMemfd(const char* name) { return static_cast<int>(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING)); }

// A peer maps the file at its current size; were it shrunk later, the peer's accesses past the new end would be
// SIGBUS in the peer's process. Sealed, its size can never change, and peers check the seal before mapping.
constexpr int kSizeSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
bool sealSize(int fd) { return ::fcntl(fd, F_ADD_SEALS, kSizeSeals) == 0; }

}  // namespace

void describeBuffer(const void* p, size_t bytes, BufferRef* ref) {
  *ref = BufferRef{};
  ref->addr = reinterpret_cast<uint64_t>(p);
  if (p == nullptr) return;
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.segments.upper_bound(a);
  if (it == r.segments.begin()) return;
  --it;
  const Registration& reg = it->second;
  if (reg.fd < 0 || a + bytes > it->first + reg.bytes) return;
  ref->segId = reg.segId;
  ref->offset = a - it->first;
  ref->segBytes = reg.bytes;
  ref->ino = reg.ino;
  ref->fd = reg.fd;
}

MemoryKind classifyHostMemory(const void* p, size_t bytes) {
  Registry& r = registry();
  if (p == nullptr || r.live.load(std::memory_order_relaxed) == 0) return MemoryKind::kHost;
  BufferRef ref;
  describeBuffer(p, bytes, &ref);
  return ref.segId != 0 ? MemoryKind::kHostRegistered : MemoryKind::kHost;
}

const FdProbe& fdProbe() {
  static const FdProbe probe = [] {
    FdProbe p;
    p.fd = createMemfd("tern-probe");
    struct stat st {};
    // Sealed like every registered buffer: a peer that accepts the probe accepts the buffers.
    if (p.fd >= 0 && sealSize(p.fd) && ::fstat(p.fd, &st) == 0) {
      p.ino = st.st_ino;
    } else if (p.fd >= 0) {
      ::close(p.fd);
      p.fd = -1;
    }
    return p;
  }();
  return probe;
}

int openPeerFd(pid_t pid, int fd, uint64_t ino) {
  if (fd < 0) return -1;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", static_cast<int>(pid), fd);
  int mine = ::open(path, O_RDWR | O_CLOEXEC);
  if (mine < 0) return -1;
  struct stat st {};
  if (::fstat(mine, &st) != 0 || st.st_ino != ino) {
    ::close(mine);
    errno = ESTALE;
    return -1;
  }
  const int seals = ::fcntl(mine, F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    ::close(mine);
    errno = EPERM;
    return -1;
  }
  return mine;
}

char* PeerMappings::resolve(pid_t pid, uint64_t token, const BufferRef& ref, size_t bytes) {
  // The peer wrote ref: no sum that can wrap.
  if (ref.segBytes == 0 || ref.offset > ref.segBytes || bytes > ref.segBytes - ref.offset) {
    errno = EINVAL;
    return nullptr;
  }
  for (auto it = lru_.begin(); it != lru_.end(); ++it) {
    if (it->token == token && it->segId == ref.segId) {
      // Against what is mapped, not what the peer claims this time.
      if (ref.offset > it->file.size() || bytes > it->file.size() - ref.offset) {
        errno = EINVAL;
        return nullptr;
      }
      if (it != lru_.begin()) lru_.splice(lru_.begin(), lru_, it);
      return lru_.front().file.data() + ref.offset;
    }
  }
  int fd = openPeerFd(pid, ref.fd, ref.ino);
  if (fd < 0) return nullptr;
  // The size the peer claims must be the file's real (sealed) size: mapping past the end would turn the first
  // access beyond it into SIGBUS.
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < 0 || static_cast<uint64_t>(st.st_size) != ref.segBytes) {
    ::close(fd);
    errno = EINVAL;
    return nullptr;
  }
  MappedFile file = MappedFile::map(fd, ref.segBytes);
  int err = errno;
  ::close(fd);
  if (!file.valid()) {
    errno = err;
    return nullptr;
  }
  char* base = file.data();
  lru_.push_front(Mapping{token, ref.segId, std::move(file)});
  while (lru_.size() > capacity_) lru_.pop_back();
  return base + ref.offset;
}

}  // namespace shm

void* shmAlloc(size_t bytes) {
  size_t rounded = shm::alignUp(bytes == 0 ? 1 : bytes, shm::kPage);
  shm::Registry& r = shm::registry();
  int fd = shm::createMemfd("tern-mem");
  if (fd >= 0 && ::ftruncate(fd, static_cast<off_t>(rounded)) == 0 && shm::sealSize(fd)) {
    shm::MappedFile file = shm::MappedFile::map(fd, rounded);
    struct stat st {};
    if (file.valid() && ::fstat(fd, &st) == 0) {
      char* p = file.data();
      std::lock_guard<std::mutex> lock(r.mutex);
      shm::Registration& reg = r.segments[reinterpret_cast<uintptr_t>(p)];
      reg.segId = r.nextId++;
      reg.fd = fd;
      reg.ino = st.st_ino;
      reg.bytes = rounded;
      reg.file = std::move(file);
      r.live.store(r.segments.size(), std::memory_order_relaxed);
      return p;
    }
  }
  if (fd >= 0) ::close(fd);
  // No memfd (or no memory for it): plain memory still works everywhere, only without zero-copy.
  TERN_LOG(kInfo, kShm, -1, "ternMemAlloc: no shared-memory file for %zu bytes, using private memory", bytes);
  void* p = std::aligned_alloc(shm::kPage, rounded);
  if (p == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(r.mutex);
  r.segments[reinterpret_cast<uintptr_t>(p)].bytes = rounded;
  r.live.store(r.segments.size(), std::memory_order_relaxed);
  return p;
}

void shmFree(void* p) {
  if (p == nullptr) return;
  shm::Registration reg{};
  {
    shm::Registry& r = shm::registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.segments.find(reinterpret_cast<uintptr_t>(p));
    if (it == r.segments.end()) {
      TERN_LOG(kWarn, kShm, -1, "ternMemFree: %p was not allocated by ternMemAlloc; ignored", p);
      return;
    }
    reg = std::move(it->second);
    r.segments.erase(it);
    r.live.store(r.segments.size(), std::memory_order_relaxed);
  }
  if (reg.fd < 0) {
    std::free(p);
    return;
  }
  // A peer mapping of this process that still holds the file (PeerMappings) keeps the memory mapped until it lets
  // go, as the owner's free leaves a peer process's mapping in place.
  reg.file.reset();
  ::close(reg.fd);
}

}  // namespace tern
