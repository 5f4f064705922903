// Registered buffers (ternMemAlloc): host memory backed by a shared-memory file, so that same-host peers can map
// it and read a collective's input (and results) in place instead of through the staging copy.
//
// Each allocation is its own memfd: it has no name, so nothing can be left in /dev/shm by a crash. A peer process
// opens it through /proc/<owner pid>/fd/<fd> (allowed where ptrace read access is, i.e. same user and no hardening
// against it; setup probes this once per pair) and checks the inode, so a file descriptor number the owner has since
// reused is never mistaken for the buffer. Peers cache their mappings by (owner, segment id): per call only
// (segment id, offset) travels, through the shared control area. Mappings go through mapped_file.hpp, so a buffer of
// this very process (ranks that are threads, made to map each other's buffers) is the owner's own mapping.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <utility>

#include "base/memory.hpp"
#include "transport/shm/mapped_file.hpp"
#include "transport/shm/shm_layout.hpp"

namespace tern::shm {

// Fills ref with the registered segment holding [p, p + bytes), if any (ref->segId stays 0 otherwise); ref->addr
// is always set.
void describeBuffer(const void* p, size_t bytes, BufferRef* ref);

// kHostRegistered when [p, p + bytes) lies in one shared-memory backed ternMemAlloc buffer, kHost otherwise
// (without a lock while nothing is registered).
MemoryKind classifyHostMemory(const void* p, size_t bytes);

// This process's probe memfd (created on first use): peers try to open it to learn whether they could map our
// registered buffers.
struct FdProbe {
  int fd = -1;
  uint64_t ino = 0;
};
const FdProbe& fdProbe();

// Opens /proc/<pid>/fd/<fd> read-write and checks that it is the file with inode ino; returns the new descriptor
// or -1.
int openPeerFd(pid_t pid, int fd, uint64_t ino);

// A peer's registered segments mapped into this process, most recently used first; the least recently used
// mapping goes when there are more than capacity (a freed segment stays mapped until then, which only costs
// address space and the memory the owner already released).
class PeerMappings {
 public:
  explicit PeerMappings(size_t capacity) : capacity_(capacity) {}
  PeerMappings(const PeerMappings&) = delete;
  PeerMappings& operator=(const PeerMappings&) = delete;

  // Address in this process of ref's buffer, which belongs to process pid (token identifies it); maps the segment
  // on first use. Returns nullptr (errno set) when it cannot be mapped.
  char* resolve(pid_t pid, uint64_t token, const BufferRef& ref, size_t bytes);

 private:
  struct Mapping {
    uint64_t token;
    uint64_t segId;
    MappedFile file;
  };
  size_t capacity_;
  std::list<Mapping> lru_;
};

}  // namespace tern::shm
