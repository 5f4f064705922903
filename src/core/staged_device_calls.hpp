// Stream-ordered calls through pinned host memory: the device path that works wherever CUDA does, over any of
// tern's host transports (the NCCL device transport, where present, is faster for uncompressed device buffers).
//
// A call on stream S with device buffers becomes, on S:
//     copy the input to pinned staging  ->  host callback: the operation may start  ->  wait until the operation's
//     completion flag (pinned memory) reaches its number  ->  copy the result back from staging
// and, on the host, an Operation queued on the communicator in call order (so stream-ordered and host calls keep
// one order on every rank), gated until the stream has staged its input; when it finishes (or fails, or is failed
// by an abort) its number is written to the flag, so S never waits forever. The call returns once all of this is
// enqueued, as NCCL's do; failures surface through ternCommGetAsyncError (the communicator fails, like NCCL's).
//
// Staging memory is pooled per communicator and reused once the stream has passed the call's last copy.
// Host buffers (pinned or not) are used in place, still ordered on S.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/device_streams.hpp"
#include "exec/operation.hpp"

namespace tern {

class Communicator;

class StagedDeviceCalls {
 public:
  explicit StagedDeviceCalls(DeviceStreams& streams);
  ~StagedDeviceCalls();
  StagedDeviceCalls(const StagedDeviceCalls&) = delete;
  StagedDeviceCalls& operator=(const StagedDeviceCalls&) = delete;

  // Enqueues op on stream and queues it on comm (see above). op's buffers are the caller's (device or host).
  void launch(Communicator& comm, const std::shared_ptr<Operation>& op, void* stream);

 private:
  struct Block {
    char* data = nullptr;
    size_t bytes = 0;
    uintptr_t marker = 0;  // set while a stream may still use it
    bool busy = false;
  };
  // A region of the caller's memory that is staged: where the staging copy of it lives.
  struct Region {
    const char* user = nullptr;
    size_t bytes = 0;
    char* staged = nullptr;
  };

  Block& acquire(size_t bytes);
  void reclaim();
  char* stagedFor(const std::vector<Region>& regions, const void* user);

  DeviceStreams& streams_;
  std::mutex mutex_;          // launch order = sequence order = the communicator's queue order
  uint32_t* flag_ = nullptr;  // pinned: the last finished call's number
  uint32_t issued_ = 0;
  size_t peakBusyBytes_ = 0;  // the most staging in use at once so far: what the idle pool may keep
  std::vector<Block> blocks_;
};

}  // namespace tern
