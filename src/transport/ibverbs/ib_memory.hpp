// A page-aligned host buffer registered with the HCA (a memory region): the receive rings peers write into, and
// the staging rings chunks are sent from.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

namespace tern::ib {

class Region {
 public:
  // access: IBV_ACCESS_* flags (receive rings need IBV_ACCESS_REMOTE_WRITE). Throws tern::Error on failure (with
  // a hint about RLIMIT_MEMLOCK, the usual cause).
  Region(ibv_pd* pd, size_t bytes, int access, int rank);
  ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  char* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  uint32_t lkey() const { return mr_->lkey; }
  uint32_t rkey() const { return mr_->rkey; }
  uint64_t address() const { return reinterpret_cast<uint64_t>(data_); }

 private:
  char* data_ = nullptr;
  size_t bytes_ = 0;
  ibv_mr* mr_ = nullptr;
};

}  // namespace tern::ib
