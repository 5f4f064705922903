#include "secret.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <system_error>

#include "unique_fd.hpp"

namespace tern::run {

std::string RandomSecretHex() {
  constexpr size_t kSecretBytes = 16;
  UniqueFd fd(::open("/dev/urandom", O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) throw std::system_error(errno, std::generic_category(), "open /dev/urandom");
  std::array<uint8_t, kSecretBytes> bytes{};
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t n = ::read(fd.get(), bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::system_error(n < 0 ? errno : EIO, std::generic_category(), "read /dev/urandom");
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * kSecretBytes);
  for (uint8_t b : bytes) {
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 0xf]);
  }
  return hex;
}

}  // namespace tern::run
