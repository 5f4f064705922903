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

#include "core/log.hpp"
#include "transport/shm/intra_node.hpp"

namespace tern {

namespace shm {
namespace {

struct Registration {
  uint64_t segId;
  int fd;  // -1: plain memory (memfd unavailable), freed with std::free
  uint64_t ino;
  size_t bytes;
};

// Registered segments by base address. Lookups happen once per buffer per pipelined collective, so a mutex and a
// map are cheap enough.
struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, Registration> segments;
  uint64_t nextId = 1;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: buffers may be freed from static destructors
  return *r;
}

int createMemfd(const char* name) { return static_cast<int>(::memfd_create(name, MFD_CLOEXEC)); }

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

const FdProbe& fdProbe() {
  static const FdProbe probe = [] {
    FdProbe p;
    p.fd = createMemfd("tern-probe");
    struct stat st {};
    if (p.fd >= 0 && ::fstat(p.fd, &st) == 0) p.ino = st.st_ino;
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
  return mine;
}

PeerMappings::~PeerMappings() {
  for (const Mapping& m : lru_) ::munmap(m.base, m.bytes);
}

char* PeerMappings::resolve(pid_t pid, uint64_t token, const BufferRef& ref, size_t bytes) {
  if (ref.offset + bytes > ref.segBytes) {
    errno = EINVAL;
    return nullptr;
  }
  for (auto it = lru_.begin(); it != lru_.end(); ++it) {
    if (it->token == token && it->segId == ref.segId) {
      if (it != lru_.begin()) lru_.splice(lru_.begin(), lru_, it);
      return lru_.front().base + ref.offset;
    }
  }
  int fd = openPeerFd(pid, ref.fd, ref.ino);
  if (fd < 0) return nullptr;
  void* p = ::mmap(nullptr, ref.segBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    errno = err;
    return nullptr;
  }
  lru_.push_front(Mapping{token, ref.segId, static_cast<char*>(p), ref.segBytes});
  while (lru_.size() > capacity_) {
    ::munmap(lru_.back().base, lru_.back().bytes);
    lru_.pop_back();
  }
  return static_cast<char*>(p) + ref.offset;
}

}  // namespace shm

void* shmAlloc(size_t bytes) {
  size_t rounded = shm::alignUp(bytes == 0 ? 1 : bytes, shm::kPage);
  shm::Registry& r = shm::registry();
  int fd = shm::createMemfd("tern-mem");
  if (fd >= 0 && ::ftruncate(fd, static_cast<off_t>(rounded)) == 0) {
    void* p = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    struct stat st {};
    if (p != MAP_FAILED && ::fstat(fd, &st) == 0) {
      std::lock_guard<std::mutex> lock(r.mutex);
      r.segments[reinterpret_cast<uintptr_t>(p)] = shm::Registration{r.nextId++, fd, st.st_ino, rounded};
      return p;
    }
    if (p != MAP_FAILED) ::munmap(p, rounded);
  }
  if (fd >= 0) ::close(fd);
  // No memfd (or no memory for it): plain memory still works everywhere, only without zero-copy.
  TERN_LOG(kInfo, kShm, -1, "ternMemAlloc: no shared-memory file for %zu bytes, using private memory", bytes);
  void* p = std::aligned_alloc(shm::kPage, rounded);
  if (p == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(r.mutex);
  r.segments[reinterpret_cast<uintptr_t>(p)] = shm::Registration{0, -1, 0, rounded};
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
    reg = it->second;
    r.segments.erase(it);
  }
  if (reg.fd < 0) {
    std::free(p);
    return;
  }
  ::munmap(p, reg.bytes);
  ::close(reg.fd);
}

}  // namespace tern
