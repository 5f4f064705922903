// Call groups (ternGroupStart/ternGroupEnd), per thread as NCCL's: calls issued inside a group are recorded, not
// run, and run together when the outermost group ends.
#pragma once

#include <memory>
#include <vector>

#include "exec/operation.hpp"

namespace tern {

struct GroupedCall {
  const void* handle;  // the communicator handle the call was issued on, checked again when the group runs
  std::shared_ptr<Operation> op;
  bool streamOrdered = false;  // a tern_cuda.h call: enqueued on `stream` when the group ends
  void* stream = nullptr;
};

// Opens a group (groups nest).
void openGroup();
// Whether this thread has a group open.
bool groupOpen();
// Records op for handle in the open group. Consecutive point-to-point calls on one communicator (and, for
// stream-ordered ones, one stream) merge into one batch (one operation), so that matching sends and receives run
// together.
void recordInGroup(const void* handle, std::shared_ptr<Operation> op, bool streamOrdered = false,
                   void* stream = nullptr);
// Adds a point-to-point transfer to the open group's last call when that is a point-to-point batch on the same
// handle (and stream) already, without an operation of its own; false when it is not (the caller then records one).
bool appendToGroupedBatch(const void* handle, const UserTransfer& transfer, bool streamOrdered = false,
                          void* stream = nullptr);
// Closes a group: false when none is open; otherwise true, with *toRun the calls to run now when it was the
// outermost (empty while still nested).
bool closeGroup(std::vector<GroupedCall>* toRun);

}  // namespace tern
