#include "buffer_kind.hpp"

#include <dlfcn.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace tern::nccl {
namespace {

// cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr), from cuda.h; declared here so
// that the host-only build needs no CUDA header and never loads the driver itself.
using PointerGetAttribute = int (*)(void*, int, unsigned long long);
constexpr int kAttributeMemoryType = 2;    // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr unsigned kMemoryTypeDevice = 2;  // CU_MEMORYTYPE_DEVICE

PointerGetAttribute driverQuery() {
  static const PointerGetAttribute query = []() -> PointerGetAttribute {
    // RTLD_NOLOAD: only a driver the program already uses; a host-only program must not pay for (or crash in)
    // loading CUDA.
    void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (driver == nullptr) return nullptr;
    return reinterpret_cast<PointerGetAttribute>(dlsym(driver, "cuPointerGetAttribute"));
  }();
  return query;
}

// Reads one byte at p through the kernel, which reports EFAULT instead of raising SIGSEGV for an address the process
// cannot read (CUDA keeps device allocations in ranges mapped PROT_NONE on the host).
bool readable(const void* p) {
  char byte;
  iovec local{&byte, 1};
  iovec remote{const_cast<void*>(p), 1};
  ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  if (n == 1) return true;
  if (errno != EFAULT) return true;  // the check itself is unavailable (ENOSYS, EPERM): assume host memory
  return false;
}

}  // namespace

BufferKind classifyBuffer(const void* p, size_t bytes) {
  if (p == nullptr || bytes == 0) return BufferKind::kHost;
  if (PointerGetAttribute query = driverQuery()) {
    unsigned type = 0;
    if (query(&type, kAttributeMemoryType, reinterpret_cast<uintptr_t>(p)) == 0 && type == kMemoryTypeDevice) {
      return BufferKind::kDevice;
    }
  }
  const char* first = static_cast<const char*>(p);
  if (!readable(first) || !readable(first + bytes - 1)) return BufferKind::kDevice;
  return BufferKind::kHost;
}

}  // namespace tern::nccl
