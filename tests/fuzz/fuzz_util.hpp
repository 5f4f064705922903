// Shared by the fuzz targets: reading fields off the fuzzer's bytes, and a file holding them for decoders that
// take a path. A decoder's documented rejection (tern::Error) is the expected outcome for most inputs; any other
// exception escaping it, a crash or a sanitizer report is a finding.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

namespace tern::fuzz {

// Consumes fixed-size values from the front of the input; past the end it yields zeros.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  template <typename T>
  T take() {
    T v{};
    const size_t n = sizeof(T) < size_ ? sizeof(T) : size_;
    std::memcpy(&v, data_, n);
    data_ += n;
    size_ -= n;
    return v;
  }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view rest() const { return {reinterpret_cast<const char*>(data_), size_}; }

 private:
  const uint8_t* data_;
  size_t size_;
};

// An anonymous file with the given contents, reachable by path (/proc/self/fd/N) for decoders that open files.
class MemFile {
 public:
  MemFile(const void* data, size_t size) {
    fd_ = static_cast<int>(::memfd_create("tern-fuzz", MFD_CLOEXEC));
    if (fd_ < 0) return;
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      ssize_t n = ::write(fd_, p, size);
      if (n <= 0) break;
      p += n;
      size -= static_cast<size_t>(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace tern::fuzz
