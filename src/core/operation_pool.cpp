#include "core/operation_pool.hpp"

#include <atomic>
#include <utility>

namespace tern {

namespace {

std::shared_ptr<Operation> freshOperation() {
  thread_local std::shared_ptr<Operation> spare;
  if (spare && spare.use_count() == 1) {
    std::atomic_thread_fence(std::memory_order_acquire);  // pairs with the release of the last other holder
    Operation& o = *spare;
    // Fresh arguments, but the vectors keep their capacity: an alltoallv fills four of them on every call.
    CollArgs fresh;
    fresh.sendCounts = std::move(o.args.sendCounts);
    fresh.sendDispls = std::move(o.args.sendDispls);
    fresh.recvCounts = std::move(o.args.recvCounts);
    fresh.recvDispls = std::move(o.args.recvDispls);
    fresh.p2p = std::move(o.args.p2p);
    for (auto* v : {&fresh.sendCounts, &fresh.sendDispls, &fresh.recvCounts, &fresh.recvDispls}) v->clear();
    fresh.p2p.clear();
    o.args = std::move(fresh);
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
