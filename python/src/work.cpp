#include "work.hpp"

#include <ATen/core/jit_type.h>
#include <pthread.h>

namespace tern::torch_backend {

Work::Work(int rank, c10d::OpType type, const char* title, std::vector<at::Tensor> outputs, std::function<void()> body,
           std::vector<c10::Device> devices)
    : c10d::Work(rank, type, title),
      outputs_(std::move(outputs)),
      body_(std::move(body)),
      onDevice_(!devices.empty()),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                       std::move(devices))) {}

bool Work::wait(std::chrono::milliseconds timeout) {
  const bool done = c10d::Work::wait(timeout);  // rethrows the body's error
  if (done && onDevice_) future_->wait();       // the current stream waits for the calls' stream
  return done;
}

c10::intrusive_ptr<c10::ivalue::Future> Work::getFuture() { return future_; }

std::vector<at::Tensor> Work::result() { return outputs_; }

void Work::run() {
  std::exception_ptr error;
  try {
    if (body_) body_();
  } catch (...) {
    error = std::current_exception();
  }
  body_ = nullptr;  // releases the tensors the body captured
  complete(error);
}

void Work::fail(std::exception_ptr error) {
  body_ = nullptr;
  complete(error);
}

void Work::addFollower(c10::intrusive_ptr<Work> other) { followers_.push_back(std::move(other)); }

void Work::complete(std::exception_ptr error) {
  // The Future first: code that returns from wait() reads get_future().value() at once (as with Gloo's Work).
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
  finish(error);
  for (auto& f : followers_) f->complete(error);
  followers_.clear();
}

WorkQueue::WorkQueue() : thread_([this] { loop(); }) {}

WorkQueue::~WorkQueue() { stop(); }

void WorkQueue::push(c10::intrusive_ptr<Work> work) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (refuse_ || stopping_) {
    std::exception_ptr error = refuse_;
    lock.unlock();
    work->fail(error ? error
                     : std::make_exception_ptr(std::runtime_error("tern: the process group has been shut down")));
    return;
  }
  queue_.push_back(std::move(work));
  changed_.notify_all();
}

void WorkQueue::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return queue_.empty() && !running_; });
}

void WorkQueue::failPending(std::exception_ptr error) {
  std::deque<c10::intrusive_ptr<Work>> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    refuse_ = error;
    pending.swap(queue_);
    changed_.notify_all();
  }
  for (auto& w : pending) w->fail(error);
}

void WorkQueue::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!thread_.joinable()) return;
    stopping_ = true;
    changed_.notify_all();
  }
  thread_.join();
}

void WorkQueue::loop() {
  // Named so that `top -H` and /proc/PID/task tell it from torch's own threads (15 characters at most).
  pthread_setname_np(pthread_self(), "tern-torch");
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return !queue_.empty() || stopping_; });
    if (queue_.empty()) return;  // stopping, nothing left
    c10::intrusive_ptr<Work> work = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    work->run();
    work.reset();
    lock.lock();
    running_ = false;
    changed_.notify_all();
  }
}

}  // namespace tern::torch_backend
