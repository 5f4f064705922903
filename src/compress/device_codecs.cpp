#include "compress/device_codecs.hpp"

#include <atomic>

namespace tern::compress {

namespace {

std::atomic<DeviceCodecs*>& registered() {
  static std::atomic<DeviceCodecs*> codecs{nullptr};
  return codecs;
}

}  // namespace

DeviceCodecs* builtinDeviceCodecs() { return registered().load(std::memory_order_acquire); }

void registerDeviceCodecs(DeviceCodecs* codecs) { registered().store(codecs, std::memory_order_release); }

}  // namespace tern::compress
