// One mapping per shared-memory file per process: every user of a file in this process (the rank that created a
// segment, the ranks that are threads of the same process and open it as a peer's, a peer's registered buffer that
// turns out to be this process's own) gets the same address.
//
// Why: ranks that are threads of one process would otherwise each map a peer's segment at an address of their own,
// so one physical word - a call's release/acquire flag, a ring head - would have as many virtual addresses as ranks.
// The hardware keeps them coherent, but ThreadSanitizer follows synchronization by address: it would miss the
// release/acquire pairs and report the buffer accesses they order. One mapping also costs less (page tables, TLB)
// than one per rank.
//
// The cache is keyed by the file's identity, (st_dev, st_ino), not by its name: a name can be unlinked and reused
// by a later job for another file. An entry lives exactly as long as its mapping, and the mapping keeps the file
// alive, so while an entry exists no other file can have its identity; the entry goes (and the mapping with it)
// when its last user lets go.
#pragma once

#include <cstddef>

namespace tern::shm {

struct FileMappingEntry;  // one mapped file of the process-wide cache (mapped_file.cpp)

class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile() { reset(); }
  MappedFile(MappedFile&& o) noexcept { *this = static_cast<MappedFile&&>(o); }
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // The whole of the file open as fd, `bytes` long (the caller has checked the file's real size), mapped shared and
  // read-write: this process's existing mapping of the same file when there is one, else a new one. Returns an
  // invalid MappedFile with errno set when mmap fails, or EINVAL when this process already maps the file with
  // another size (the file changed size since: it cannot be trusted to be what either user expects).
  static MappedFile map(int fd, size_t bytes);

  // Lets go of this user's share; the last one unmaps.
  void reset();

  char* data() const { return data_; }
  size_t size() const { return bytes_; }
  bool valid() const { return data_ != nullptr; }
  // True when map() made the mapping, false when it joined an existing one (whose pages are already in place).
  bool fresh() const { return fresh_; }

  // How many distinct files this process maps through MappedFile (tests check that sharing happens).
  static size_t mappedFilesForTesting();

 private:
  FileMappingEntry* entry_ = nullptr;
  char* data_ = nullptr;
  size_t bytes_ = 0;
  bool fresh_ = false;
};

}  // namespace tern::shm
