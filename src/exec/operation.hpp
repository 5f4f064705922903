// One queued call on a communicator: what to do, on which buffers, and its completion state. Requests returned by
// the async API are shared pointers to these.
#pragma once

#include <condition_variable>
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

struct Operation {
  CollArgs args;
  const void* input = nullptr;
  void* output = nullptr;
  std::vector<UserTransfer> transfers;  // point-to-point groups
  Compressor* compressor = nullptr;     // compressed collectives: codec + error feedback (owned by the caller)
  // TERN_COMPRESS may compress this call; whether it pays is decided when it runs (Communicator::runCollective), in
  // call order, so that what the communicator learned by then (its network) counts alike on every rank.
  bool implicitCompression = false;

  void finish(ternResult_t r, std::string message) {
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
