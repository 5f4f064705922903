#include "transport/ucx/ucx_status.hpp"

#include "base/error.hpp"

namespace tern::ucx {

ternResult_t resultFor(ucs_status_t status) {
  switch (status) {
    case UCS_OK:
      return ternSuccess;
    case UCS_ERR_MESSAGE_TRUNCATED:
      return ternInvalidUsage;
    case UCS_ERR_NO_MEMORY:
    case UCS_ERR_NO_RESOURCE:
    case UCS_ERR_EXCEEDS_LIMIT:
    case UCS_ERR_IO_ERROR:
    case UCS_ERR_NO_DEVICE:
    case UCS_ERR_UNSUPPORTED:
      return ternSystemError;
    case UCS_ERR_INVALID_PARAM:
    case UCS_ERR_INVALID_ADDR:
      return ternInternalError;
    default:
      // Unreachable peers, reset connections, rejected or canceled operations: the other side or the network.
      return ternRemoteError;
  }
}

void check(ucs_status_t status, int rank, const char* what) {
  if (status == UCS_OK) return;
  throwError(resultFor(status), "rank %d: ucx: %s failed: %s", rank, what, ucs_status_string(status));
}

}  // namespace tern::ucx
