// A POSIX shared-memory segment (shm_open + ftruncate + mmap) owned by one rank and mapped by its same-host peers.
//
// Why named segments at all, when a name can outlive a crash: peers in other processes need a way to find the
// memory, and the TCP mesh can only carry bytes, not file descriptors. The name lives only for the setup
// handshake: the creator unlinks it as soon as every peer reports that it has mapped it, so after setup nothing is
// left in /dev/shm for a crash to leak; the memory itself lives on until the last mapping goes away.
//
// Within one process a segment is mapped once (mapped_file.hpp): the creator and every rank that is a thread of the
// same process share that address.
#pragma once

#include <cstddef>
#include <string>

#include "transport/shm/mapped_file.hpp"

namespace tern::shm {

class Segment {
 public:
  Segment() = default;
  ~Segment();
  Segment(Segment&& o) noexcept { *this = std::move(o); }
  Segment& operator=(Segment&& o) noexcept;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Creates name exclusively (mode 0600), sizes it to bytes and maps it read-write. populateBytes of the start are
  // faulted in at once so the first collective does not pay for page faults. Throws tern::Error (ternSystemError).
  // setupRank >= 0: the rank whose setup this is, for the test hook of segment_sweeper.hpp.
  static Segment create(const std::string& name, size_t bytes, size_t populateBytes, int setupRank = -1);
  // Opens a peer's segment, checks that it is a regular shared-memory object of exactly expectedBytes owned by
  // this user (a stale or foreign object with the same name must not be mapped), and maps it, with the first
  // populateBytes (which the creator has already allocated) mapped at once; a segment this process maps already
  // (its creator is a thread here) is shared at the address it has. Throws tern::Error.
  static Segment open(const std::string& name, size_t expectedBytes, size_t populateBytes);

  // Removes the name (the mapping stays valid). Idempotent; only the creator unlinks.
  void unlink();

  char* data() const { return mapping_.data(); }
  size_t size() const { return mapping_.size(); }
  const std::string& name() const { return name_; }
  bool valid() const { return mapping_.valid(); }

 private:
  void reset();

  MappedFile mapping_;
  std::string name_;
  bool linked_ = false;  // created here and not yet unlinked
};

}  // namespace tern::shm
