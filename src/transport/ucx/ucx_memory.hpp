// Memory registration for UCX transfers: ucp_mem_map handles of large send/receive buffers, cached (bounded LRU,
// see registration_cache.hpp) so that the executor's reuse of the same buffers costs one registration, not one
// per message, and passed to UCX with each request (UCP_OP_ATTR_FIELD_MEMH) so zero-copy transports skip their own
// registration.
//
// Cached registrations are dropped when their memory is unmapped: UCM (UCX's memory-hook library) reports every
// munmap/mremap/brk shrink/madvise(DONTNEED) in the process, the same events UCX's own registration cache uses.
// Where those hooks are unavailable (UCX_MEM_EVENTS=no, or a build without libucm), nothing is cached or passed:
// UCX then registers on its own, which is always correct.
//
// Knobs: TERN_UCX_REG_CACHE_BYTES (default 1 GiB; 0 turns registration off), TERN_UCX_REG_MIN_BYTES (default
// 256 KiB: smaller messages go eagerly through bounce buffers, where a registration would be wasted).
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <memory>

#include "transport/ucx/registration_cache.hpp"

namespace tern::ucx {

class Registrations {
 public:
  struct Lease {
    ucp_mem_h memh = nullptr;  // null: pass no handle
    RegistrationCache::Lease cached;
  };

  Registrations(ucp_context_h context, int rank);
  ~Registrations();
  Registrations(const Registrations&) = delete;
  Registrations& operator=(const Registrations&) = delete;

  bool enabled() const { return cache_ != nullptr; }
  // A handle for [addr, addr + bytes), or an empty lease when registration is off or the message is small.
  Lease acquire(const void* addr, size_t bytes);
  void release(const Lease& lease);
  RegistrationCache* cache() { return cache_.get(); }

 private:
  ucp_context_h context_;
  int rank_;
  size_t minBytes_;
  std::unique_ptr<RegistrationCache> cache_;
  bool hooked_ = false;
};

}  // namespace tern::ucx
