// Challenge-response authentication of the connections between the ranks of one job (bootstrap and peer sockets).
//
// Both ends of a connection hold the job secret. Each sends a fresh random nonce; each then proves knowledge of the
// secret with HMAC-SHA256 (OpenSSL's libcrypto) over a label naming its role and direction, both nonces and the
// connection's identity (ranks, job id). The secret itself never crosses the wire, a proof is useless on any other
// connection (fresh nonces) or in the other direction (labels), and proofs are compared in constant time.
//
// FrameConn is the non-blocking side of a handshake: a socket that reads one fixed-size frame at a time, so that
// one thread can drive many half-open connections from strangers in a poll loop without any of them blocking it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/socket.hpp"
#include "base/unique_id.hpp"

namespace tern {

inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kMacBytes = 32;
using Nonce = std::array<uint8_t, kNonceBytes>;
using Mac = std::array<uint8_t, kMacBytes>;

// Cryptographically random bytes (RAND_bytes). Throws ternSystemError if the generator fails: a connection must
// never be authenticated with a predictable nonce.
void fillRandom(void* out, size_t bytes);
Nonce freshNonce();

// HMAC-SHA256 keyed with the job secret over the label and then every part added, each part preceded by its length
// (so that no two different sequences of parts give the same input).
class MacBuilder {
 public:
  MacBuilder(const Secret& secret, const char* label);
  MacBuilder& add(const void* data, size_t bytes);
  template <class T>
  MacBuilder& addValue(const T& value) {
    return add(&value, sizeof(value));
  }
  Mac finish() const;

 private:
  Secret secret_;
  std::vector<uint8_t> input_;
};

// Constant-time equality (CRYPTO_memcmp): how much of a forged proof was right must not show in the timing.
bool macEqual(const Mac& a, const Mac& b);

// A connection in a handshake, driven without blocking. One frame is expected at a time (expect()); frames to send
// are queued (queue()). advance() moves whatever bytes the socket allows and throws Error (ternRemoteError) when the
// peer closes or resets the connection.
class FrameConn {
 public:
  FrameConn(Fd fd, SocketAddress peer, Clock::time_point deadline);

  void expect(size_t bytes);
  void queue(const void* data, size_t bytes);
  // Returns true once the expected frame has fully arrived (and stays true until the next expect()).
  bool advance();
  bool frameReady() const { return expected_ > 0 && received_ == expected_; }
  bool outputFlushed() const { return sent_ == output_.size(); }
  const uint8_t* frame() const { return input_.data(); }
  short pollEvents() const;
  // Sends what is still queued, waiting at most until deadline.
  void flush(Clock::time_point deadline, const std::atomic<bool>* abortFlag);

  int fd() const { return fd_.get(); }
  Fd releaseFd() { return std::move(fd_); }
  const SocketAddress& peer() const { return peer_; }
  Clock::time_point deadline() const { return deadline_; }

 private:
  Fd fd_;
  SocketAddress peer_;
  Clock::time_point deadline_;
  std::vector<uint8_t> input_;
  size_t expected_ = 0;
  size_t received_ = 0;
  std::vector<uint8_t> output_;
  size_t sent_ = 0;
};

// Accepts a connection if one is waiting, without blocking: an empty Fd when none is (or the accept failed in a
// way that only affects that connection). *peer gets the remote address. *outOfFds is set when the process has no
// descriptor left (EMFILE/ENFILE): the caller should drop a pending stranger to make room.
Fd acceptNow(int listenFd, SocketAddress* peer, bool* outOfFds);

// How long a stranger may take to complete its part of a handshake before the listener drops it. A real rank
// answers within a round trip; the window only bounds how long a silent connection holds a slot.
inline constexpr std::chrono::milliseconds kHandshakeWindow{5000};
// Unauthenticated connections a listener keeps at once beyond the ones it legitimately expects; when full, the
// oldest stranger is dropped to make room (a real rank whose connection is dropped that way reconnects).
inline constexpr size_t kMaxStrangers = 256;

}  // namespace tern
