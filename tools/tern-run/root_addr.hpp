// TERN_ROOT_ADDR: the HOST:PORT rank 0 of the job listens on for bootstrap.
#pragma once

#include <string>
#include <string_view>

#include "unique_fd.hpp"

namespace tern::run {

// HOST:PORT with a non-empty host (a bracketed IPv6 literal such as [::1] is accepted) and a port in 1..65535.
bool IsValidRootAddr(std::string_view addr);

// A loopback port held for rank 0's bootstrap listener for as long as this object lives.
//
// The socket is bound to 127.0.0.1:0 with SO_REUSEADDR and never listens: while it stays bound the kernel hands
// the port to no one else (no ephemeral connect or bind(0) gets it, and a plain bind fails with EADDRINUSE), yet
// rank 0's listener, which binds with SO_REUSEADDR too, can still bind and listen on it (Linux allows reuse of a
// port whose other sockets are not listening). So there is no pick-then-close window in which another program can
// take the port by chance; a program that deliberately binds the same port with SO_REUSEADDR first makes rank 0's
// bind fail loudly (and could never pass the bootstrap's mutual authentication anyway).
struct LoopbackRootReservation {
  UniqueFd socket;   // close-on-exec: the ranks do not inherit it
  std::string addr;  // "127.0.0.1:PORT"
};

// Throws std::system_error on failure.
LoopbackRootReservation ReserveLoopbackRootAddr();

}  // namespace tern::run
