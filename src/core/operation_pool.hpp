// Operations for the calls a thread issues, recycled: a blocking call's operation is released when it returns, and
// allocating a new one (with its mutex, condition variable and argument vectors) is a tenth of a small
// shared-memory call.
#pragma once

#include <memory>

#include "exec/operation.hpp"

namespace tern {

// A cleared operation for one call: one of the thread's spares that no one else holds any more (no request handle,
// no queue, no worker still finishing it, no open group), else a new one that becomes a spare.
std::shared_ptr<Operation> newOperation(Collective coll, const void* input, void* output, size_t count,
                                        ternDataType_t dtype, ternRedOp_t op, int root);

}  // namespace tern
