#include "transport/ibverbs/ib_memory.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/error.hpp"

namespace tern::ib {

Region::Region(ibv_pd* pd, size_t bytes, int access, int rank) : bytes_(bytes) {
  size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t rounded = (bytes + page - 1) / page * page;
  void* p = nullptr;
  if (::posix_memalign(&p, page, rounded) != 0) {
    throwError(ternSystemError, "rank %d: ibverbs: cannot allocate a %zu-byte ring", rank, bytes);
  }
  std::memset(p, 0, rounded);
  data_ = static_cast<char*>(p);
  mr_ = ibv_reg_mr(pd, data_, rounded, access);
  if (mr_ == nullptr) {
    int err = errno;
    std::free(data_);
    throwError(ternSystemError,
               "rank %d: ibverbs: ibv_reg_mr of %zu bytes failed: %s (raise the locked-memory limit: ulimit -l "
               "unlimited, or lower TERN_IB_CHUNK_BYTES / TERN_IB_SLOTS)",
               rank, rounded, std::strerror(err));
  }
}

Region::~Region() {
  if (mr_ != nullptr) ibv_dereg_mr(mr_);
  std::free(data_);
}

}  // namespace tern::ib
