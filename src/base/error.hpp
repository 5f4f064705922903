// Typed errors inside the library. C++ code throws tern::Error; the C API boundary (src/core/api.cpp) catches it,
// records the message for ternGetLastError and returns the code. Messages say what failed and where.
#pragma once

#include <stdexcept>
#include <string>

#include "tern/tern.h"

namespace tern {

class Error : public std::runtime_error {
 public:
  Error(ternResult_t code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ternResult_t code() const { return code_; }

 private:
  ternResult_t code_;
};

// printf-style message builder, so call sites read like log lines.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

[[noreturn]] void throwError(ternResult_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// System-call failure: appends strerror(errno).
[[noreturn]] void throwSystemError(const char* what);

}  // namespace tern
