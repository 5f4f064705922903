// One queued call on a communicator: what to do, on which buffers, and its completion state. Requests returned by
// the async API are shared pointers to these.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "exec/collective.hpp"

namespace tern {

struct Compressor;

struct UserTransfer {
  bool isSend = false;
  int peer = -1;
  void* data = nullptr;
  size_t bytes = 0;
};

// What an operation waits for before it runs, opened from any thread: the stream-ordered device path
// (core/staged_device_calls.hpp) opens it when the caller's stream has staged the inputs, which may be long after the
// call was queued.
class OperationGate {
 public:
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  // Whether it is open by `until`.
  bool waitOpen(std::chrono::steady_clock::time_point until) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_until(lock, until, [&] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

struct Operation {
  CollArgs args;
  const void* input = nullptr;
  void* output = nullptr;
  std::vector<UserTransfer> transfers;  // point-to-point groups
  Compressor* compressor = nullptr;     // compressed collectives: codec + error feedback (owned by the caller)
  // TERN_COMPRESS may compress this call; whether it pays is decided when it runs (Communicator::runCollective), in
  // call order, so that what the communicator learned by then (its network) counts alike on every rank.
  bool implicitCompression = false;
  // Which buffer the implicit compression's error feedback belongs to (null: output). Staged calls run on pinned
  // copies whose addresses vary; the feedback stays with the caller's buffer.
  const void* feedbackKey = nullptr;
  // False for an operation that is one step of a larger call (the exchanges of a compressed allreduce on device
  // buffers): it leaves ternCommLastAlgorithm naming that call.
  bool recordsAlgorithm = true;
  // Stream-ordered calls: the worker runs the operation once the gate is open, and calls onFinish with its result
  // whenever it finishes (run, failed, or failed unrun after an abort), so that the stream waiting on it goes on.
  std::shared_ptr<OperationGate> gate;
  std::function<void(ternResult_t, const std::string&)> onFinish;

  void finish(ternResult_t r, std::string message) {
    std::function<void(ternResult_t, const std::string&)> hook = std::move(onFinish);
    onFinish = nullptr;
    if (hook) hook(r, message);
    {
      std::lock_guard<std::mutex> lock(mutex);
      result = r;
      error = std::move(message);
      done = true;
    }
    cv.notify_all();
  }
  bool isDone() {
    std::lock_guard<std::mutex> lock(mutex);
    return done;
  }
  void waitDone() {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return done; });
  }

  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  ternResult_t result = ternSuccess;
  std::string error;
};

}  // namespace tern
