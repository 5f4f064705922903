// The shared-memory setup messages (announcement, outcome), a mapped segment's header, ring slot headers and
// buffer descriptors and the blocks they hold (src/transport/shm/shm_wire.hpp): all written by another process. When a
// check accepts a slot header or a descriptor, the harness does the copy the transport would do, into buffers of
// exactly the checked sizes, so an accepting check that is too lax shows up as an ASan report.
#include <cstdint>
#include <vector>

#include "base/error.hpp"
#include "fuzz_util.hpp"
#include "transport/shm/shm_wire.hpp"

using namespace tern;
using namespace tern::shm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Bytes in(data, size);
  const uint8_t which = in.take<uint8_t>();
  const int nranks = 1 + in.take<uint8_t>() % 64;
  const int peer = in.take<uint8_t>() % nranks;
  const Layout layout = Layout::forRanks(nranks);
  try {
    switch (which % 6) {
      case 0: {
        wire::Hello h = wire::decodeHello(in.data(), in.size(), peer, layout);
        // An accepted name is used as a C string and as a path.
        if (h.bytes != 0 && !wire::isSegmentName(h.name)) __builtin_trap();
        break;
      }
      case 1:
        wire::decodeOutcomes(in.data(), in.size(), nranks, peer);
        break;
      case 2: {
        wire::Hello hello{};
        hello.pid = in.take<uint32_t>();
        hello.token = in.take<uint64_t>();
        const SegmentHeader h = in.take<SegmentHeader>();
        wire::checkSegmentHeader(h, hello, peer, layout);
        break;
      }
      case 3: {
        const size_t recvBytes = in.take<uint16_t>() % (3 * kRingSlotBytes);
        const size_t offset = in.take<uint16_t>();
        const bool started = in.take<uint8_t>() & 1;
        std::vector<uint8_t> slot(kRingSlotBytes, 0);
        const size_t n = in.size() < slot.size() ? in.size() : slot.size();
        std::memcpy(slot.data(), in.data(), n);
        const size_t payload = kRingSlotBytes - sizeof(SlotHeader);
        const SlotHeader h = wire::readSlotHeader(slot.data());
        wire::checkSlotHeader(h, started, recvBytes, offset, payload, 0, peer);
        if (h.kind != SlotKind::kRendezvous) {
          std::vector<uint8_t> recv(recvBytes);
          if (h.bytes > 0) std::memcpy(recv.data() + offset, slot.data() + sizeof(SlotHeader), h.bytes);
        }
        break;
      }
      case 4: {
        const size_t bytes = in.take<uint32_t>();
        const BufferRef ref = in.take<BufferRef>();
        wire::checkBufferRef(ref, bytes, 0, peer);
        if (ref.mode == BufferMode::kDirect && ref.segId != 0 && ref.segBytes <= (1u << 20)) {
          std::vector<uint8_t> segment(ref.segBytes);
          volatile uint8_t sink = 0;
          for (size_t i = 0; i < bytes; i += 4096) sink = sink + segment[ref.offset + i];
          if (bytes > 0) sink = sink + segment[ref.offset + bytes - 1];
        }
        break;
      }
      case 5: {  // an alltoall block the peer says lies in its registered input
        const uint64_t addr = in.take<uint64_t>();
        const size_t bytes = in.take<uint32_t>();
        const BufferRef ref = in.take<BufferRef>();
        const uint64_t at = wire::checkBlockInBuffer(ref, addr, bytes, 0, peer);
        if (ref.segBytes <= (1u << 20)) {
          std::vector<uint8_t> segment(ref.segBytes);
          volatile uint8_t sink = 0;
          if (bytes > 0) sink = sink + segment[ref.offset + at] + segment[ref.offset + at + bytes - 1];
        }
        break;
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
