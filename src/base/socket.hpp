// Thin, exception-based helpers over POSIX sockets: addresses, interface selection (NCCL's TERN_SOCKET_IFNAME
// syntax), listening, connecting with retry, and blocking exact-size I/O that honours a deadline and an abort
// flag (so bootstrap waits can never hang).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>

namespace tern {

using Clock = std::chrono::steady_clock;

// Clock::now() to within a scheduler tick (CLOCK_MONOTONIC_COARSE, same origin as steady_clock on Linux), at a
// fraction of the cost: for deadlines measured in seconds that every call computes.
Clock::time_point coarseNow();

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  // "host:port", "[v6]:port". Throws ternInvalidArgument on a bad string or unresolvable host.
  static SocketAddress parse(const std::string& hostPort);
  std::string toString() const;
  int family() const { return storage.ss_family; }
  bool isLoopback() const;
  void setPort(uint16_t port);
  uint16_t port() const;
};

// Picks the local address to use for this job: with a TERN_SOCKET_IFNAME spec ("eth,ib" prefixes, "^docker"
// exclusions, "=eth0" exact names), the first matching up interface; without one, the address the kernel would
// use to reach `towards` when given (so a rank talks to the root over the interface that reaches it), else the
// first non-loopback up IPv4 interface, else loopback.
SocketAddress chooseLocalAddress(const std::string& ifnameSpec, const SocketAddress* towards);
// Name of the interface that owns addr ("lo", "eth0", ...) or "?".
std::string interfaceNameOf(const SocketAddress& addr);

// RAII file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset();
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Listens on addr (port 0 picks one); returns the socket, writes the bound address to *bound.
Fd listenOn(const SocketAddress& addr, SocketAddress* bound);
// Connects, retrying refused connections until the deadline (the peer may not listen yet).
Fd connectTo(const SocketAddress& addr, Clock::time_point deadline, const std::atomic<bool>* abortFlag);
// Accepts one connection, waiting at most until the deadline.
Fd acceptOne(int listenFd, Clock::time_point deadline, const std::atomic<bool>* abortFlag);

// Exact-size blocking I/O with a deadline. what names the operation in the error message.
void sendExact(int fd, const void* data, size_t bytes, Clock::time_point deadline, const std::atomic<bool>* abortFlag,
               const char* what);
void recvExact(int fd, void* data, size_t bytes, Clock::time_point deadline, const std::atomic<bool>* abortFlag,
               const char* what);

void setNonBlocking(int fd, bool on);
void setNoDelay(int fd);

}  // namespace tern
