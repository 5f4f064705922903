#include "core/call_group.hpp"

namespace tern {

namespace {

thread_local int groupDepth = 0;
thread_local std::vector<GroupedCall> groupCalls;

// The open group's last call when it is a point-to-point batch on handle (and stream), else null.
Operation* batchFor(const void* handle, bool streamOrdered, void* stream) {
  if (groupCalls.empty()) return nullptr;
  GroupedCall& last = groupCalls.back();
  const bool same = last.handle == handle && last.op->args.coll == Collective::kPointToPoint &&
                    last.streamOrdered == streamOrdered && last.stream == stream;
  return same ? last.op.get() : nullptr;
}

}  // namespace

void openGroup() { ++groupDepth; }

bool groupOpen() { return groupDepth > 0; }

void recordInGroup(const void* handle, std::shared_ptr<Operation> op, bool streamOrdered, void* stream) {
  if (op->args.coll == Collective::kPointToPoint) {
    if (Operation* batch = batchFor(handle, streamOrdered, stream); batch != nullptr) {
      batch->transfers.insert(batch->transfers.end(), op->transfers.begin(), op->transfers.end());
      return;
    }
  }
  groupCalls.push_back({handle, std::move(op), streamOrdered, stream});
}

bool appendToGroupedBatch(const void* handle, const UserTransfer& transfer, bool streamOrdered, void* stream) {
  Operation* batch = groupDepth > 0 ? batchFor(handle, streamOrdered, stream) : nullptr;
  if (batch == nullptr) return false;
  batch->transfers.push_back(transfer);
  return true;
}

bool closeGroup(std::vector<GroupedCall>* toRun) {
  toRun->clear();
  if (groupDepth == 0) return false;
  if (--groupDepth == 0) toRun->swap(groupCalls);
  return true;
}

}  // namespace tern
