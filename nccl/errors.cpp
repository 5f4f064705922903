// Library information and errors: the version reported, error strings, and the per-thread last error that
// ncclGetLastError returns (the shim's own message or tern's, whichever is newer).
#include <cstdarg>
#include <cstdio>
#include <string>

#include "shim_internal.hpp"

namespace tern::nccl {
namespace {

// The version this library answers with: torch 2.15 checks for the NCCL it was built against (2.30.7).
constexpr int kReportedVersion = 23007;

// Errors raised here (rather than inside tern) are kept per thread; ncclGetLastError reports the newer one.
thread_local std::string shimError;
thread_local bool shimErrorIsLatest = false;

}  // namespace

ncclResult_t fail(ncclResult_t code, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  shimError = buf;
  shimErrorIsLatest = true;
  return code;
}

ncclResult_t fromTern(ternResult_t r) {
  if (r != ternSuccess) shimErrorIsLatest = false;
  return toNccl(r);
}

std::string lastError(ncclComm_t comm) {
  if (shimErrorIsLatest) return shimError;
  return ternGetLastError(toTern(comm));
}

ncclResult_t unsupported(const char* fn, const char* why) {
  return fail(ncclInvalidUsage, "%s is not supported by tern's libnccl.so.2: %s", fn, why);
}

}  // namespace tern::nccl

using namespace tern::nccl;

NCCL_SHIM_API ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = kReportedVersion;
  return ncclSuccess;
}

NCCL_SHIM_API const char* ncclGetErrorString(ncclResult_t result) {
  switch (static_cast<int>(result)) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the tern developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    case 8:
      return "operation timed out";  // ncclTimeout (nccl.h >= 2.29)
    default:
      return "unknown result code";
  }
}

NCCL_SHIM_API const char* ncclGetLastError(ncclComm_t comm) {
  return shimErrorIsLatest ? shimError.c_str() : ternGetLastError(toTern(comm));
}

NCCL_SHIM_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (asyncError == nullptr) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
  ternResult_t a = ternSuccess;
  ternResult_t r = ternCommGetAsyncError(toTern(comm), &a);
  if (r != ternSuccess) return fromTern(r);
  *asyncError = toNccl(a);
  return ncclSuccess;
}
