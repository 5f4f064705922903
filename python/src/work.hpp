// Asynchronous work of the tern backend: a c10d::Work whose body runs on the process group's worker thread, and
// that thread. Operations of one process group run one at a time in issue order (tern's communicators require it
// and every rank issues them in the same order), while the Python thread goes on, as with Gloo's worker threads.
#pragma once

#include <ATen/core/ivalue.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

namespace tern::torch_backend {

class Work : public c10d::Work {
 public:
  // outputs: the tensors the Future holds once the body has run (what DDP comm hooks read). devices: empty for host
  // work; for work on device tensors, their device: the body then only enqueues on the caller's current stream, and
  // the Future is device-aware (it records an event on that stream when completed, and waiting on it makes the
  // waiter's current stream wait for the event), as ProcessGroupNCCL's futures are.
  Work(int rank, c10d::OpType type, const char* title, std::vector<at::Tensor> outputs, std::function<void()> body,
       std::vector<c10::Device> devices = {});

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override;
  // Host work: blocks until the body has run. Device work: the body has run (enqueued) already; the caller's
  // current stream is made to wait for the stream the calls went to.
  bool wait(std::chrono::milliseconds timeout) override;

  // Runs the body on the calling (worker) thread and completes the Work and its Future; an exception thrown by the
  // body becomes the Work's error, rethrown by wait() and set on the Future.
  void run();
  // Completes the Work with an error without running it (the process group was aborted or shut down first).
  void fail(std::exception_ptr error);
  // Also completes `other` when this one completes (point-to-point calls recorded inside a coalesced batch).
  void addFollower(c10::intrusive_ptr<Work> other);

 private:
  void complete(std::exception_ptr error);

  std::vector<at::Tensor> outputs_;
  std::function<void()> body_;
  bool onDevice_ = false;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::vector<c10::intrusive_ptr<Work>> followers_;
};

// One thread that runs queued Works in order; it sleeps while the queue is empty.
class WorkQueue {
 public:
  WorkQueue();
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void push(c10::intrusive_ptr<Work> work);
  // Blocks until every queued Work has completed.
  void drain();
  // Fails every Work still waiting (not the running one) with `error`, and every Work pushed later.
  void failPending(std::exception_ptr error);
  // Stops the thread once the queue is empty (after drain or failPending).
  void stop();

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<c10::intrusive_ptr<Work>> queue_;
  bool running_ = false;  // a Work is executing
  bool stopping_ = false;
  std::exception_ptr refuse_;  // set by failPending: every later push fails with it
  std::thread thread_;
};

}  // namespace tern::torch_backend
