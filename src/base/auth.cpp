#include "base/auth.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "base/error.hpp"

namespace tern {

void fillRandom(void* out, size_t bytes) {
  if (bytes == 0) return;
  if (RAND_bytes(static_cast<unsigned char*>(out), static_cast<int>(bytes)) != 1) {
    throwError(ternSystemError, "RAND_bytes failed: no cryptographic randomness for the job's handshakes");
  }
}

Nonce freshNonce() {
  Nonce n;
  fillRandom(n.data(), n.size());
  return n;
}

MacBuilder::MacBuilder(const Secret& secret, const char* label) : secret_(secret) { add(label, std::strlen(label)); }

MacBuilder& MacBuilder::add(const void* data, size_t bytes) {
  uint64_t length = bytes;
  const auto* l = reinterpret_cast<const uint8_t*>(&length);
  input_.insert(input_.end(), l, l + sizeof(length));
  const auto* p = static_cast<const uint8_t*>(data);
  input_.insert(input_.end(), p, p + bytes);
  return *this;
}

Mac MacBuilder::finish() const {
  Mac mac{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), secret_.bytes, sizeof(secret_.bytes), input_.data(), input_.size(), mac.data(), &length) ==
          nullptr ||
      length != mac.size()) {
    throwError(ternSystemError, "HMAC-SHA256 failed");
  }
  return mac;
}

bool macEqual(const Mac& a, const Mac& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

FrameConn::FrameConn(Fd fd, SocketAddress peer, Clock::time_point deadline)
    : fd_(std::move(fd)), peer_(peer), deadline_(deadline) {
  setNonBlocking(fd_.get(), true);
}

void FrameConn::expect(size_t bytes) {
  input_.assign(bytes, 0);
  expected_ = bytes;
  received_ = 0;
}

void FrameConn::queue(const void* data, size_t bytes) {
  if (sent_ == output_.size()) {
    output_.clear();
    sent_ = 0;
  }
  const auto* p = static_cast<const uint8_t*>(data);
  output_.insert(output_.end(), p, p + bytes);
}

bool FrameConn::advance() {
  while (sent_ < output_.size()) {
    ssize_t n = ::send(fd_.get(), output_.data() + sent_, output_.size() - sent_, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
    throwError(ternRemoteError, "connection to %s lost (%s)", peer_.toString().c_str(), std::strerror(errno));
  }
  while (received_ < expected_) {
    ssize_t n = ::recv(fd_.get(), input_.data() + received_, expected_ - received_, MSG_DONTWAIT);
    if (n > 0) {
      received_ += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) throwError(ternRemoteError, "connection closed by %s", peer_.toString().c_str());
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
    throwError(ternRemoteError, "connection to %s lost (%s)", peer_.toString().c_str(), std::strerror(errno));
  }
  return frameReady();
}

short FrameConn::pollEvents() const {
  short events = 0;
  if (received_ < expected_) events |= POLLIN;
  if (sent_ < output_.size()) events |= POLLOUT;
  return events;
}

void FrameConn::flush(Clock::time_point deadline, const std::atomic<bool>* abortFlag) {
  if (sent_ < output_.size()) {
    sendExact(fd_.get(), output_.data() + sent_, output_.size() - sent_, deadline, abortFlag,
              ("send to " + peer_.toString()).c_str());
  }
  output_.clear();
  sent_ = 0;
}

Fd acceptNow(int listenFd, SocketAddress* peer, bool* outOfFds) {
  *outOfFds = false;
  peer->length = sizeof(peer->storage);
  int fd =
      ::accept4(listenFd, reinterpret_cast<sockaddr*>(&peer->storage), &peer->length, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd >= 0) {
    setNoDelay(fd);
    return Fd(fd);
  }
  if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) *outOfFds = true;
  return Fd();
}

}  // namespace tern
