#include "transport/ucx/ucx_memory.hpp"

#include <unistd.h>

#include <algorithm>

#include "base/env.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "transport/ucx/ucx_status.hpp"

#ifdef TERN_HAVE_UCM
#include <ucm/api/ucm.h>
#endif

namespace tern::ucx {

namespace {

constexpr long kDefaultCacheBytes = 1L << 30;
constexpr long kDefaultMinBytes = 256L << 10;
// Bounds the lookup scan; each entry is at least TERN_UCX_REG_MIN_BYTES, so this is rarely the binding limit.
constexpr int kMaxEntries = 256;

#ifdef TERN_HAVE_UCM
// Runs inside munmap & co., on any thread: must not allocate (RegistrationCache::invalidate does not).
void onUnmapped(ucm_event_type_t, ucm_event_t* event, void* arg) {
  static_cast<RegistrationCache*>(arg)->invalidate(event->vm_unmapped.address, event->vm_unmapped.size);
}
#endif

}  // namespace

Registrations::Registrations(ucp_context_h context, int rank)
    : context_(context),
      rank_(rank),
      minBytes_(static_cast<size_t>(std::max(1L, envInt("UCX_REG_MIN_BYTES", kDefaultMinBytes)))) {
  long capacity = envInt("UCX_REG_CACHE_BYTES", kDefaultCacheBytes);
  if (capacity <= 0) {
    TERN_LOG(kInfo, kNet, rank, "ucx: registration cache off (TERN_UCX_REG_CACHE_BYTES=0)");
    return;
  }
#ifdef TERN_HAVE_UCM
  auto reg = [context, rank](void* base, size_t bytes) -> RegistrationCache::Handle {
    ucp_mem_map_params_t params{};
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address = base;
    params.length = bytes;
    ucp_mem_h memh = nullptr;
    check(ucp_mem_map(context, &params, &memh), rank, "ucp_mem_map of a transfer buffer");
    return memh;
  };
  auto dereg = [context](RegistrationCache::Handle h) { ucp_mem_unmap(context, static_cast<ucp_mem_h>(h)); };
  cache_ = std::make_unique<RegistrationCache>(static_cast<size_t>(capacity), kMaxEntries,
                                               static_cast<size_t>(::sysconf(_SC_PAGESIZE)), reg, dereg);
  ucs_status_t status = ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED, 0, &onUnmapped, cache_.get());
  if (status != UCS_OK) {
    TERN_LOG(kInfo, kNet, rank, "ucx: registration cache off: UCM memory hooks unavailable (%s)",
             ucs_status_string(status));
    cache_.reset();
    return;
  }
  hooked_ = true;
  TERN_LOG(kInfo, kNet, rank, "ucx: registration cache up to %ld bytes for messages >= %zu bytes", capacity, minBytes_);
#else
  TERN_LOG(kInfo, kNet, rank, "ucx: registration cache off: built without libucm (no memory hooks)");
#endif
}

Registrations::~Registrations() {
#ifdef TERN_HAVE_UCM
  // After this returns no hook runs on the cache (UCM takes its handler lock), so it can go.
  if (hooked_) ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED, &onUnmapped, cache_.get());
#endif
  cache_.reset();
}

Registrations::Lease Registrations::acquire(const void* addr, size_t bytes) {
  Lease lease;
  if (cache_ == nullptr || bytes < minBytes_) return lease;
  try {
    lease.cached = cache_->acquire(addr, bytes);
  } catch (const Error& e) {
    // E.g. read-only memory that a transport wants to register writable: UCX copes on its own when given no
    // handle, so a failed registration only costs the optimization, never the transfer.
    TERN_LOG(kInfo, kNet, rank_, "ucx: sending without a registration: %s", e.what());
    return lease;
  }
  lease.memh = static_cast<ucp_mem_h>(lease.cached.handle);
  return lease;
}

void Registrations::release(const Lease& lease) {
  if (lease.memh != nullptr) cache_->release(lease.cached);
}

}  // namespace tern::ucx
