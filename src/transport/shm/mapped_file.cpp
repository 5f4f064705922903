#include "transport/shm/mapped_file.hpp"

#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <utility>

namespace tern::shm {

struct FileMappingEntry {
  dev_t dev;
  ino_t ino;
  char* base;
  size_t bytes;
  size_t users;
};

namespace {

struct Cache {
  // Held across mmap/munmap: mapping happens at setup and buffer registration, not per call, and it keeps an entry
  // from being found between its last release and its munmap.
  std::mutex mutex;
  std::map<std::pair<dev_t, ino_t>, FileMappingEntry*> files;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: segments and buffers may be released from static destructors
  return *c;
}

}  // namespace

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    reset();
    entry_ = std::exchange(o.entry_, nullptr);
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    fresh_ = std::exchange(o.fresh_, false);
  }
  return *this;
}

MappedFile MappedFile::map(int fd, size_t bytes) {
  MappedFile m;
  struct stat st {};
  if (::fstat(fd, &st) != 0) return m;
  if (bytes == 0) {
    errno = EINVAL;
    return m;
  }
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  const auto key = std::make_pair(st.st_dev, st.st_ino);
  auto it = c.files.find(key);
  if (it != c.files.end()) {
    FileMappingEntry* e = it->second;
    if (e->bytes != bytes) {
      errno = EINVAL;
      return m;
    }
    ++e->users;
    m.entry_ = e;
    m.data_ = e->base;
    m.bytes_ = e->bytes;
    return m;
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return m;
  auto* e = new FileMappingEntry{st.st_dev, st.st_ino, static_cast<char*>(p), bytes, 1};
  c.files.emplace(key, e);
  m.entry_ = e;
  m.data_ = e->base;
  m.bytes_ = bytes;
  m.fresh_ = true;
  return m;
}

void MappedFile::reset() {
  if (entry_ == nullptr) return;
  FileMappingEntry* e = std::exchange(entry_, nullptr);
  data_ = nullptr;
  bytes_ = 0;
  fresh_ = false;
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (--e->users != 0) return;
  c.files.erase(std::make_pair(e->dev, e->ino));
  ::munmap(e->base, e->bytes);
  delete e;
}

size_t MappedFile::mappedFilesForTesting() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.files.size();
}

}  // namespace tern::shm
