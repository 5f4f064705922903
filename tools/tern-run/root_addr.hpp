// TERN_ROOT_ADDR: the HOST:PORT rank 0 of the job listens on for bootstrap.
#pragma once

#include <string>
#include <string_view>

namespace tern::run {

// HOST:PORT with a non-empty host (a bracketed IPv6 literal such as [::1] is accepted) and a port in 1..65535.
bool IsValidRootAddr(std::string_view addr);

// Returns "127.0.0.1:PORT" for a port the kernel handed out for 127.0.0.1 just now. The socket is closed before
// returning, so another process could take the port before rank 0 binds it; that window is the price of not
// passing a listening socket down to rank 0. Throws std::system_error on failure.
std::string PickLoopbackRootAddr();

}  // namespace tern::run
