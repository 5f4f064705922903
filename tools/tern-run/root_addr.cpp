#include "root_addr.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <system_error>

namespace tern::run {

bool IsValidRootAddr(std::string_view addr) {
  size_t colon = addr.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  std::string_view host = addr.substr(0, colon);
  std::string_view port = addr.substr(colon + 1);
  // An unbracketed IPv6 literal is ambiguous (is the last group the port?), so require brackets for those.
  bool bracketed = host.front() == '[';
  if (bracketed && (host.size() < 3 || host.back() != ']')) return false;
  if (!bracketed && host.find(':') != std::string_view::npos) return false;
  if (port.empty() || port.size() > 5) return false;
  int value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  return value >= 1 && value <= 65535;
}

LoopbackRootReservation ReserveLoopbackRootAddr() {
  UniqueFd sock(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) throw std::system_error(errno, std::generic_category(), "socket");
  int one = 1;
  if (::setsockopt(sock.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
    throw std::system_error(errno, std::generic_category(), "setsockopt SO_REUSEADDR");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;  // let the kernel choose a free ephemeral port
  if (::bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    throw std::system_error(errno, std::generic_category(), "bind 127.0.0.1:0");
  }
  socklen_t len = sizeof(addr);
  if (::getsockname(sock.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::system_error(errno, std::generic_category(), "getsockname");
  }
  LoopbackRootReservation r;
  r.addr = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  r.socket = std::move(sock);
  return r;
}

}  // namespace tern::run
