// Test double of the CUDA driver for the stream-ordered calls (core/device_streams.hpp), for machines without a GPU:
// a stream is a host thread running what was enqueued on it in order, and "device memory" is an address range the
// host cannot touch (reserved PROT_NONE, so any access by the library outside the stream's copies crashes the test,
// as it would fault on a real GPU's memory), whose bytes live in a shadow buffer that only the streams' copies and
// the test's upload/download reach.
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "compress/device_codecs.hpp"
#include "core/device_streams.hpp"
#include "kernels/reduce.hpp"

namespace tern::testing {

class HostStream {
 public:
  HostStream() : thread_([this] { loop(); }) {}
  ~HostStream() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      paused_ = false;
    }
    cv_.notify_all();
    thread_.join();
  }
  void enqueue(std::function<void()> work) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(work));
    }
    cv_.notify_all();
  }
  // Holds the stream's work (as a long kernel would) until resume().
  void pause() {
    std::lock_guard<std::mutex> lock(mutex_);
    paused_ = true;
  }
  void resume() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      paused_ = false;
    }
    cv_.notify_all();
  }
  // Waits until everything enqueued so far has run; false if that takes longer than `limit`.
  bool synchronize(std::chrono::milliseconds limit = std::chrono::seconds(60)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_for(lock, limit, [&] { return queue_.empty() && !running_; });
  }
  size_t pending() {
    std::lock_guard<std::mutex> lock(mutex_);
    return queue_.size() + (running_ ? 1 : 0);
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return stopping_ || (!paused_ && !queue_.empty()); });
      if (queue_.empty() && stopping_) return;
      if (paused_ && !stopping_) continue;
      std::function<void()> work = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
      lock.unlock();
      work();
      lock.lock();
      running_ = false;
      cv_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool paused_ = false, running_ = false, stopping_ = false;
  std::thread thread_;
};

class HostStreams final : public DeviceStreams {
 public:
  ~HostStreams() override {
    for (auto& [dev, a] : allocs_) {
      munmap(dev, a.reserved);
      std::free(a.shadow);
    }
  }

  // "Device memory" of `bytes` bytes (see above).
  void* allocDevice(size_t bytes) {
    const size_t page = 4096, reserved = (bytes + page) / page * page;
    void* dev = mmap(nullptr, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (dev == MAP_FAILED) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    allocs_[static_cast<char*>(dev)] = {bytes, reserved, static_cast<char*>(std::calloc(reserved, 1))};
    return dev;
  }
  void freeDevice(void* dev) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = allocs_.find(static_cast<char*>(dev));
    if (it == allocs_.end()) return;
    munmap(it->first, it->second.reserved);
    std::free(it->second.shadow);
    allocs_.erase(it);
  }
  void upload(void* dev, const void* host, size_t bytes) {
    if (bytes > 0) std::memcpy(shadowOf(dev), host, bytes);
  }
  void download(void* host, const void* dev, size_t bytes) {
    if (bytes > 0) std::memcpy(host, shadowOf(dev), bytes);
  }

  bool isDeviceMemory(const void* p) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return find(p) != nullptr;
  }
  void* allocPinned(size_t bytes) override {
    pinnedAllocs.fetch_add(1);
    return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  }
  void freePinned(void* p) override { std::free(p); }
  void copyAsync(void* dst, const void* src, size_t bytes, void* stream) override {
    copies.fetch_add(1);
    char* d = shadowOf(dst);
    const char* s = shadowOf(src);
    on(stream).enqueue([d, s, bytes] {
      if (bytes > 0) std::memcpy(d, s, bytes);
    });
  }
  void callHostAsync(void* stream, void (*fn)(void*), void* arg) override {
    on(stream).enqueue([fn, arg] { fn(arg); });
  }
  void waitFlagAsync(void* stream, const uint32_t* flag, uint32_t value) override {
    on(stream).enqueue([this, flag, value] {
      const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(120);
      while (static_cast<int32_t>(__atomic_load_n(flag, __ATOMIC_ACQUIRE) - value) < 0) {
        if (std::chrono::steady_clock::now() > limit) {
          stuckWaits.fetch_add(1);  // a real stream would wait forever here
          return;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    });
  }
  uintptr_t recordMarker(void* stream) override {
    auto* reached = new std::atomic<bool>(false);
    on(stream).enqueue([reached] { reached->store(true); });
    return reinterpret_cast<uintptr_t>(reached);
  }
  bool markerReached(uintptr_t marker) override { return reinterpret_cast<std::atomic<bool>*>(marker)->load(); }
  void releaseMarker(uintptr_t marker) override { delete reinterpret_cast<std::atomic<bool>*>(marker); }
  compress::DeviceCodecs* codecsFor(void* /*stream*/) override { return withCodecs ? &codecs_ : nullptr; }
  bool hasCodecs() const override { return withCodecs; }
  // Poses as cudaSetDevice on the calling thread: currentDeviceBusId answers busId there ("" for none).
  void setCurrentDevice(const std::string& busId) {
    std::lock_guard<std::mutex> lock(mutex_);
    currentDevice_[std::this_thread::get_id()] = busId;
  }
  std::string currentDeviceBusId() override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = currentDevice_.find(std::this_thread::get_id());
    return it == currentDevice_.end() ? std::string() : it->second;
  }

  HostStream defaultStream;
  std::atomic<int> pinnedAllocs{0}, copies{0}, stuckWaits{0};
  // Whether the streams offer device codecs (the CPU codecs, run on the streams' threads over the shadow bytes),
  // as a library built with CUDA does on a GPU.
  bool withCodecs = false;
  std::atomic<int> codecSteps{0};  // encodes and decodes the device codecs ran

 private:
  struct Alloc {
    size_t bytes, reserved;
    char* shadow;
  };
  HostStream& on(void* stream) { return stream == nullptr ? defaultStream : *static_cast<HostStream*>(stream); }
  const std::pair<char* const, Alloc>* find(const void* p) {
    auto it = allocs_.upper_bound(static_cast<char*>(const_cast<void*>(p)));
    if (it == allocs_.begin()) return nullptr;
    --it;
    const char* c = static_cast<const char*>(p);
    return c < it->first + it->second.reserved ? &*it : nullptr;
  }
  // Where the bytes of p live: the shadow of device memory, host memory itself.
  char* shadowOf(const void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (const auto* a = find(p)) return a->second.shadow + (static_cast<const char*>(p) - a->first);
    return static_cast<char*>(const_cast<void*>(p));
  }

  // The device codecs' double: each step is the CPU executor's own (codec.hpp, finalizeAverage, the fp16/bf16 casts of
  // cpu_backend.cpp), run in stream order on the shadow bytes.
  class HostCodecs final : public compress::DeviceCodecs {
   public:
    explicit HostCodecs(HostStreams& s) : s_(s) {}
    const char* name() const override { return "host double"; }
    void* allocDevice(size_t bytes) override { return s_.allocDevice(bytes); }
    void freeDevice(void* p) override {
      if (p != nullptr) s_.freeDevice(p);
    }
    void zeroAsync(void* p, size_t bytes, void* stream) override {
      char* d = s_.shadowOf(p);
      s_.on(stream).enqueue([d, bytes] { std::memset(d, 0, bytes); });
    }
    size_t workspaceBytes(const compress::Codec& /*codec*/, size_t /*n*/) override { return 0; }
    void encodeAsync(const compress::Codec& codec, const void* in, ternDataType_t dtype, size_t n, void* payload,
                     const compress::EncodeContext& ctx, float* residual, void* /*workspace*/, size_t /*bytes*/,
                     void* stream) override {
      const char* x = s_.shadowOf(in);
      char* p = s_.shadowOf(payload);
      auto* r = residual == nullptr ? nullptr : reinterpret_cast<float*>(s_.shadowOf(residual));
      s_.codecSteps.fetch_add(1);
      s_.on(stream).enqueue([&codec, x, dtype, n, p, ctx, r] { codec.encode(x, dtype, n, p, ctx, r); });
    }
    void decodeAsync(const compress::Codec& codec, const void* payload, size_t n, float* out, bool accumulate,
                     void* stream) override {
      const char* p = s_.shadowOf(payload);
      auto* o = reinterpret_cast<float*>(s_.shadowOf(out));
      s_.codecSteps.fetch_add(1);
      s_.on(stream).enqueue(
          [&codec, p, n, o, accumulate] { codec.decode(p, codec.payloadBytes(n), n, o, accumulate); });
    }
    void addAsync(float* dst, const float* a, const float* b, size_t n, void* stream) override {
      auto* d = reinterpret_cast<float*>(s_.shadowOf(dst));
      const auto* x = reinterpret_cast<const float*>(s_.shadowOf(a));
      const auto* y = reinterpret_cast<const float*>(s_.shadowOf(b));
      s_.on(stream).enqueue([d, x, y, n] { tern::reduce(d, x, y, n, ternFloat32, ternSum); });
    }
    void divideAsync(float* x, size_t n, int divisor, void* stream) override {
      char* d = s_.shadowOf(x);
      s_.on(stream).enqueue([d, n, divisor] { finalizeAverage(d, n, ternFloat32, divisor); });
    }
    void castAsync(void* dst, ternDataType_t dtype, const float* src, size_t n, void* stream) override {
      auto* d = reinterpret_cast<uint16_t*>(s_.shadowOf(dst));
      const auto* f = reinterpret_cast<const float*>(s_.shadowOf(src));
      s_.on(stream).enqueue([d, dtype, f, n] {
        for (size_t i = 0; i < n; ++i) d[i] = dtype == ternBfloat16 ? floatToBfloat16(f[i]) : floatToHalf(f[i]);
      });
    }

   private:
    HostStreams& s_;
  };

  std::mutex mutex_;
  std::map<char*, Alloc> allocs_;
  std::map<std::thread::id, std::string> currentDevice_;
  HostCodecs codecs_{*this};
};

}  // namespace tern::testing
