#include "core/operation_pool.hpp"

#include <atomic>

namespace tern {

namespace {

std::shared_ptr<Operation> freshOperation() {
  thread_local std::shared_ptr<Operation> spare;
  if (spare && spare.use_count() == 1) {
    std::atomic_thread_fence(std::memory_order_acquire);  // pairs with the release of the last other holder
    Operation& o = *spare;
    o.args = CollArgs{};
    o.input = nullptr;
    o.output = nullptr;
    o.transfers.clear();
    o.compressor = nullptr;
    o.implicitCompression = false;
    o.feedbackKey = nullptr;
    o.gate = nullptr;
    o.onFinish = nullptr;
    o.done = false;
    o.result = ternSuccess;
    o.error.clear();
    return spare;
  }
  spare = std::make_shared<Operation>();
  return spare;
}

}  // namespace

std::shared_ptr<Operation> newOperation(Collective coll, const void* input, void* output, size_t count,
                                        ternDataType_t dtype, ternRedOp_t op, int root) {
  auto o = freshOperation();
  o->args.coll = coll;
  o->args.count = count;
  o->args.dtype = dtype;
  o->args.op = op;
  o->args.root = root;
  o->input = input;
  o->output = output;
  return o;
}

}  // namespace tern
