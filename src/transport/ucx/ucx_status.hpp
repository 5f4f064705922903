// Turning UCX status codes into tern errors with messages that say which call failed, for which rank and peer,
// and what that usually means.
#pragma once

#include <ucs/type/status.h>

#include "tern/tern.h"

namespace tern::ucx {

// The tern result a UCX failure maps to: a peer or the network failing is ternRemoteError (the job can't go on
// but this rank did nothing wrong), UCX's own timeouts included (UCX reports a killed peer as "Endpoint timeout";
// ternTimeout stays reserved for TERN_TIMEOUT expiring); a truncated message is ternInvalidUsage (ranks disagree
// about a size); running out of memory or of resources is ternSystemError.
ternResult_t resultFor(ucs_status_t status);

// Throws tern::Error(resultFor(status)) naming what failed; does nothing for UCS_OK.
void check(ucs_status_t status, int rank, const char* what);

}  // namespace tern::ucx
