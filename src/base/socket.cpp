#include "base/socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <thread>
#include <vector>

#include "base/error.hpp"

namespace tern {

Clock::time_point coarseNow() {
  timespec ts{};
  if (::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0) return Clock::now();
  return Clock::time_point(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
}

namespace {

int remainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left < 0) return 0;
  return static_cast<int>(left > 100 ? 100 : left);  // wake often enough to notice an abort
}

void checkAbort(const std::atomic<bool>* abortFlag, const char* what) {
  if (abortFlag != nullptr && abortFlag->load(std::memory_order_relaxed)) {
    throwError(ternRemoteError, "%s: communicator aborted", what);
  }
}

// Waits until fd is ready for events, the deadline passes (throws ternTimeout) or abort is raised.
void waitReady(int fd, short events, Clock::time_point deadline, const std::atomic<bool>* abortFlag, const char* what) {
  for (;;) {
    checkAbort(abortFlag, what);
    if (Clock::now() >= deadline) throwError(ternTimeout, "%s: timed out (TERN_TIMEOUT)", what);
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, remainingMs(deadline));
    if (r > 0) return;
    if (r < 0 && errno != EINTR) throwSystemError(what);
  }
}

struct IfSpec {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> names;
};

IfSpec parseIfSpec(const std::string& spec) {
  IfSpec s;
  std::string rest = spec;
  if (!rest.empty() && rest[0] == '^') {
    s.exclude = true;
    rest = rest.substr(1);
  }
  if (!rest.empty() && rest[0] == '=') {
    s.exact = true;
    rest = rest.substr(1);
  }
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t comma = rest.find(',', pos);
    std::string item = rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!item.empty()) s.names.push_back(item);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return s;
}

bool matchesIfSpec(const IfSpec& s, const char* name) {
  bool hit = false;
  for (const auto& n : s.names) {
    if (s.exact ? n == name : std::strncmp(name, n.c_str(), n.size()) == 0) hit = true;
  }
  return s.exclude ? !hit : hit;
}

}  // namespace

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.release();
  }
  return *this;
}

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

SocketAddress SocketAddress::parse(const std::string& hostPort) {
  std::string host, port;
  if (!hostPort.empty() && hostPort[0] == '[') {
    size_t close = hostPort.find(']');
    if (close == std::string::npos || close + 1 >= hostPort.size() || hostPort[close + 1] != ':') {
      throwError(ternInvalidArgument, "bad address '%s' (expected [v6]:port)", hostPort.c_str());
    }
    host = hostPort.substr(1, close - 1);
    port = hostPort.substr(close + 2);
  } else {
    size_t colon = hostPort.rfind(':');
    if (colon == std::string::npos)
      throwError(ternInvalidArgument, "bad address '%s' (expected host:port)", hostPort.c_str());
    host = hostPort.substr(0, colon);
    port = hostPort.substr(colon + 1);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    throwError(ternInvalidArgument, "cannot resolve '%s': %s", hostPort.c_str(), gai_strerror(rc));
  }
  SocketAddress a;
  std::memcpy(&a.storage, res->ai_addr, res->ai_addrlen);
  a.length = res->ai_addrlen;
  ::freeaddrinfo(res);
  return a;
}

std::string SocketAddress::toString() const {
  char host[INET6_ADDRSTRLEN] = "?";
  if (family() == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&storage);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (family() == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "?";
}

bool SocketAddress::isLoopback() const {
  if (family() == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&storage);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (family() == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage);
    return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
  }
  return false;
}

void SocketAddress::setPort(uint16_t p) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(p);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(p);
}

uint16_t SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return 0;
}

SocketAddress chooseLocalAddress(const std::string& ifnameSpec, const SocketAddress* towards) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) throwSystemError("getifaddrs");
  SocketAddress chosen;
  bool found = false;
  IfSpec spec = parseIfSpec(ifnameSpec);
  if (!ifnameSpec.empty()) {
    for (int pass = 0; pass < 2 && !found; ++pass) {  // IPv4 first, then IPv6
      for (ifaddrs* i = list; i != nullptr && !found; i = i->ifa_next) {
        if (i->ifa_addr == nullptr || !(i->ifa_flags & IFF_UP)) continue;
        int fam = i->ifa_addr->sa_family;
        if (fam != (pass == 0 ? AF_INET : AF_INET6)) continue;
        if (!matchesIfSpec(spec, i->ifa_name)) continue;
        chosen.length = fam == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
        std::memcpy(&chosen.storage, i->ifa_addr, chosen.length);
        found = true;
      }
    }
    ::freeifaddrs(list);
    if (!found) throwError(ternInvalidArgument, "TERN_SOCKET_IFNAME=%s matches no up interface", ifnameSpec.c_str());
    chosen.setPort(0);
    return chosen;
  }
  if (towards != nullptr) {
    // Let the routing table decide: a connected UDP socket reports the source address it would use.
    Fd udp(::socket(towards->family(), SOCK_DGRAM, 0));
    if (udp && ::connect(udp.get(), reinterpret_cast<const sockaddr*>(&towards->storage), towards->length) == 0) {
      chosen.length = sizeof(chosen.storage);
      if (::getsockname(udp.get(), reinterpret_cast<sockaddr*>(&chosen.storage), &chosen.length) == 0) found = true;
    }
  }
  for (ifaddrs* i = list; i != nullptr && !found; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    if (i->ifa_addr->sa_family != AF_INET) continue;
    if (std::strncmp(i->ifa_name, "docker", 6) == 0) continue;
    chosen.length = sizeof(sockaddr_in);
    std::memcpy(&chosen.storage, i->ifa_addr, chosen.length);
    found = true;
  }
  ::freeifaddrs(list);
  if (!found) chosen = SocketAddress::parse("127.0.0.1:0");
  chosen.setPort(0);
  return chosen;
}

std::string interfaceNameOf(const SocketAddress& addr) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "?";
  std::string name = "?";
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != addr.family()) continue;
    if (addr.family() == AF_INET && reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr ==
                                        reinterpret_cast<const sockaddr_in*>(&addr.storage)->sin_addr.s_addr) {
      name = i->ifa_name;
      break;
    }
    if (addr.family() == AF_INET6 &&
        std::memcmp(&reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr,
                    &reinterpret_cast<const sockaddr_in6*>(&addr.storage)->sin6_addr, sizeof(in6_addr)) == 0) {
      name = i->ifa_name;
      break;
    }
  }
  ::freeifaddrs(list);
  return name;
}

Fd listenOn(const SocketAddress& addr, SocketAddress* bound) {
  Fd fd(::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) throwSystemError("socket");
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr.storage), addr.length) != 0) {
    throwSystemError(("bind " + addr.toString()).c_str());
  }
  if (::listen(fd.get(), SOMAXCONN) != 0) throwSystemError("listen");
  if (bound != nullptr) {
    bound->length = sizeof(bound->storage);
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound->storage), &bound->length);
  }
  return fd;
}

Fd connectTo(const SocketAddress& addr, Clock::time_point deadline, const std::atomic<bool>* abortFlag) {
  std::string what = "connect to " + addr.toString();
  auto backoff = std::chrono::milliseconds(1);
  for (;;) {
    checkAbort(abortFlag, what.c_str());
    Fd fd(::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) throwSystemError("socket");
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr.storage), addr.length) == 0) {
      setNoDelay(fd.get());
      return fd;
    }
    int e = errno;
    if (e != ECONNREFUSED && e != ETIMEDOUT && e != EAGAIN && e != EINTR && e != ECONNRESET) {
      errno = e;
      throwSystemError(what.c_str());
    }
    if (Clock::now() + backoff >= deadline) throwError(ternTimeout, "%s: timed out (TERN_TIMEOUT)", what.c_str());
    std::this_thread::sleep_for(backoff);
    if (backoff < std::chrono::milliseconds(100)) backoff *= 2;
  }
}

Fd acceptOne(int listenFd, Clock::time_point deadline, const std::atomic<bool>* abortFlag) {
  for (;;) {
    waitReady(listenFd, POLLIN, deadline, abortFlag, "accept");
    int fd = ::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      setNoDelay(fd);
      return Fd(fd);
    }
    if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) throwSystemError("accept");
  }
}

void sendExact(int fd, const void* data, size_t bytes, Clock::time_point deadline, const std::atomic<bool>* abortFlag,
               const char* what) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      waitReady(fd, POLLOUT, deadline, abortFlag, what);
      continue;
    }
    throwError(ternRemoteError, "%s: connection lost (%s)", what, std::strerror(errno));
  }
}

void recvExact(int fd, void* data, size_t bytes, Clock::time_point deadline, const std::atomic<bool>* abortFlag,
               const char* what) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = ::recv(fd, p, bytes, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) throwError(ternRemoteError, "%s: connection closed by peer", what);
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      waitReady(fd, POLLIN, deadline, abortFlag, what);
      continue;
    }
    throwError(ternRemoteError, "%s: connection lost (%s)", what, std::strerror(errno));
  }
}

void setNonBlocking(int fd, bool on) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK));
}

void setNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace tern
