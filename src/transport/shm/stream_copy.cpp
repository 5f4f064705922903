#include "transport/shm/stream_copy.hpp"

#include <atomic>
#include <cstdint>

namespace tern::shm {

namespace {
std::atomic<size_t> gStreamingOutputBytes{8u << 20};
}  // namespace

size_t streamingOutputBytes() { return gStreamingOutputBytes.load(std::memory_order_relaxed); }
void setStreamingOutputBytesForTesting(size_t bytes) { gStreamingOutputBytes.store(bytes); }

}  // namespace tern::shm
