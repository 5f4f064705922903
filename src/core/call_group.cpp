#include "core/call_group.hpp"

namespace tern {

namespace {

thread_local int groupDepth = 0;
thread_local std::vector<GroupedCall> groupCalls;

}  // namespace

void openGroup() { ++groupDepth; }

bool groupOpen() { return groupDepth > 0; }

void recordInGroup(const void* handle, std::shared_ptr<Operation> op, bool streamOrdered, void* stream) {
  if (op->args.coll == Collective::kPointToPoint && !groupCalls.empty()) {
    GroupedCall& last = groupCalls.back();
    if (last.handle == handle && last.op->args.coll == Collective::kPointToPoint &&
        last.streamOrdered == streamOrdered && last.stream == stream) {
      auto& dst = last.op->transfers;
      dst.insert(dst.end(), op->transfers.begin(), op->transfers.end());
      return;
    }
  }
  groupCalls.push_back({handle, std::move(op), streamOrdered, stream});
}

bool closeGroup(std::vector<GroupedCall>* toRun) {
  toRun->clear();
  if (groupDepth == 0) return false;
  if (--groupDepth == 0) toRun->swap(groupCalls);
  return true;
}

}  // namespace tern
