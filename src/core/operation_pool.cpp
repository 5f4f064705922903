#include "core/operation_pool.hpp"

#include <atomic>
#include <utility>

namespace tern {

namespace {

// Clears a recycled operation for its next call; its vectors keep their capacity (an alltoallv fills four of them
// on every call, a point-to-point group its transfers).
void clearForReuse(Operation& o) {
  std::atomic_thread_fence(std::memory_order_acquire);  // pairs with the release of the last other holder
  o.args.reset();
  o.input = nullptr;
  o.output = nullptr;
  o.transfers.clear();
  o.compressor = nullptr;
  o.implicitCompression = false;
  o.feedbackKey = nullptr;
  o.recordsAlgorithm = true;
  o.gate = nullptr;
  o.onFinish = nullptr;
  o.done = false;
  o.result = ternSuccess;
  o.error.clear();
}

// A few spares per thread: a group (ternGroupStart/End) holds its calls' operations until it ends (a batch of sends
// and receives is one), and an asynchronous call's until its request is freed.
constexpr size_t kSpares = 4;

std::shared_ptr<Operation> freshOperation() {
  thread_local std::shared_ptr<Operation> spares[kSpares];
  thread_local size_t next = 0;  // where the next new operation goes once every spare is in use
  for (std::shared_ptr<Operation>& spare : spares) {
    if (spare && spare.use_count() == 1) {
      clearForReuse(*spare);
      return spare;
    }
  }
  for (std::shared_ptr<Operation>& spare : spares) {
    if (!spare) return spare = std::make_shared<Operation>();
  }
  std::shared_ptr<Operation>& replaced = spares[next];
  next = (next + 1) % kSpares;
  return replaced = std::make_shared<Operation>();
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
