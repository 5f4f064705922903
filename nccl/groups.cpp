// Groups: tern's groups (per thread, nesting; the outermost End runs every recorded call, several communicators
// together).
#include <memory>
#include <vector>

#include "shim_internal.hpp"

namespace tern::nccl {

thread_local int groupDepth = 0;
thread_local std::vector<std::unique_ptr<char[]>> groupScratch;

}  // namespace tern::nccl

using namespace tern::nccl;

NCCL_SHIM_API ncclResult_t ncclGroupStart() {
  ++groupDepth;
  return fromTern(ternGroupStart());
}

NCCL_SHIM_API ncclResult_t ncclGroupEnd() {
  if (groupDepth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  ternResult_t r = ternGroupEnd();
  if (--groupDepth == 0) groupScratch.clear();
  return fromTern(r);
}

NCCL_SHIM_API ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t*) {
  return unsupported("ncclGroupSimulateEnd",
                     "tern's cost model is queried through ternQueryAlgorithm; the recorded group stays open");
}
