#include "transport/shm/shm_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/error.hpp"
#include "transport/shm/segment_sweeper.hpp"

namespace tern::shm {

namespace {

// Closes a descriptor on every path out of create/open: the mapping keeps the memory, the fd is not needed.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Segment::~Segment() { reset(); }

Segment& Segment::operator=(Segment&& o) noexcept {
  if (this != &o) {
    reset();
    mapping_ = std::move(o.mapping_);
    name_ = std::move(o.name_);
    linked_ = std::exchange(o.linked_, false);
  }
  return *this;
}

void Segment::reset() {
  unlink();
  mapping_.reset();
}

void Segment::unlink() {
  if (linked_) {
    ::shm_unlink(name_.c_str());
    linked_ = false;
  }
}

Segment Segment::create(const std::string& name, size_t bytes, size_t populateBytes, int setupRank) {
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throwError(ternSystemError, "shm_open(%s) failed: %s", name.c_str(), std::strerror(errno));
  if (setupRank >= 0) setupKillPoint(setupRank, "opened");
  FdCloser closer{fd};
  Segment s;
  s.name_ = name;
  s.linked_ = true;  // from here on, every failure path unlinks (the destructor of s)
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    throwError(ternSystemError, "ftruncate(%s, %zu) failed: %s (is /dev/shm large enough?)", name.c_str(), bytes,
               std::strerror(errno));
  }
  s.mapping_ = MappedFile::map(fd, bytes);
  if (!s.mapping_.valid())
    throwError(ternSystemError, "mmap(%s, %zu) failed: %s", name.c_str(), bytes, std::strerror(errno));
  if (populateBytes > 0) {
    // Writing (not just reading) allocates the tmpfs pages now; a fault in the middle of a timed collective would
    // cost more than this one-time memset.
    std::memset(s.data(), 0, std::min(populateBytes, bytes));
  }
  if (setupRank >= 0) setupKillPoint(setupRank, "created");
  return s;
}

Segment Segment::open(const std::string& name, size_t expectedBytes, size_t populateBytes) {
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0)
    throwError(ternSystemError, "shm_open(%s) of a peer's segment failed: %s", name.c_str(), std::strerror(errno));
  FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throwError(ternSystemError, "fstat(%s) failed: %s", name.c_str(), std::strerror(errno));
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || static_cast<size_t>(st.st_size) != expectedBytes) {
    throwError(ternSystemError,
               "shared-memory segment %s is not the one announced (%lld bytes, owner %u; expected %zu "
               "bytes, owner %u)",
               name.c_str(), static_cast<long long>(st.st_size), static_cast<unsigned>(st.st_uid), expectedBytes,
               static_cast<unsigned>(::geteuid()));
  }
  Segment s;
  s.name_ = name;
  s.mapping_ = MappedFile::map(fd, expectedBytes);
  if (!s.mapping_.valid()) throwError(ternSystemError, "mmap(%s) failed: %s", name.c_str(), std::strerror(errno));
#ifdef MADV_POPULATE_WRITE
  // Best effort (Linux >= 5.14): map the pages now instead of taking a minor fault per page in the first calls (a
  // mapping this process already had has them).
  if (populateBytes > 0 && s.mapping_.fresh())
    ::madvise(s.data(), std::min(populateBytes, expectedBytes), MADV_POPULATE_WRITE);
#else
  (void)populateBytes;
#endif
  return s;
}

}  // namespace tern::shm
