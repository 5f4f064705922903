// TERN_SECRET: the job's shared secret, so ranks can reject bootstrap connections from outside the job.
#pragma once

#include <string>

namespace tern::run {

// 128 bits from /dev/urandom as 32 lowercase hex digits. Throws std::system_error if /dev/urandom is unreadable:
// a job must never run with a guessable secret.
std::string RandomSecretHex();

}  // namespace tern::run
