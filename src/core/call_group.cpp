#include "core/call_group.hpp"

namespace tern {

namespace {

thread_local int groupDepth = 0;
thread_local std::vector<GroupedCall> groupCalls;

}  // namespace

void openGroup() { ++groupDepth; }

bool groupOpen() { return groupDepth > 0; }

void recordInGroup(const void* handle, std::shared_ptr<Operation> op) {
  if (op->args.coll == Collective::kPointToPoint && !groupCalls.empty() && groupCalls.back().handle == handle &&
      groupCalls.back().op->args.coll == Collective::kPointToPoint) {
    auto& dst = groupCalls.back().op->transfers;
    dst.insert(dst.end(), op->transfers.begin(), op->transfers.end());
    return;
  }
  groupCalls.push_back({handle, std::move(op)});
}

bool closeGroup(std::vector<GroupedCall>* toRun) {
  toRun->clear();
  if (groupDepth == 0) return false;
  if (--groupDepth == 0) toRun->swap(groupCalls);
  return true;
}

}  // namespace tern
