// Credit accounting and chunk scheduling of the ibverbs data path (src/transport/ibverbs/ib_credits.*,
// ib_chunks.*): the slot header and immediates against their documented bytes, every header mismatch rejected with
// a clear error, and the protocol simulated without a device: a sender and a receiver exchange chunks through a
// ring and credits through a queue, in adversarial orders, and every byte arrives in order without a slot ever
// being overwritten.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "transport/ibverbs/ib_chunks.hpp"
#include "transport/ibverbs/ib_credits.hpp"

namespace tern::ib {
namespace {

TEST(IbCredits, WindowTakesSlotsInOrderAndBlocksAtZero) {
  CreditWindow w(3);
  EXPECT_EQ(w.take(), 0u);
  EXPECT_EQ(w.take(), 1u);
  EXPECT_EQ(w.take(), 2u);
  EXPECT_FALSE(w.canSend());
  EXPECT_THROW(w.take(), Error);
  w.grant(2);
  EXPECT_EQ(w.credits(), 2u);
  EXPECT_EQ(w.take(), 0u);  // wraps around the ring
  EXPECT_EQ(w.sent(), 4u);
}

// Credit returns arrive from the peer: returning more than were taken is a protocol error that says so.
TEST(IbCredits, ReturningMoreThanOutstandingIsAProtocolError) {
  CreditWindow w(4);
  w.take();
  try {
    w.grant(2);
    ADD_FAILURE() << "2 credits accepted with 1 outstanding";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ternInternalError);
    EXPECT_NE(std::string(e.what()).find("returned 2 credits with only 1 outstanding"), std::string::npos) << e.what();
  }
  EXPECT_EQ(w.credits(), 3u) << "a rejected grant changes nothing";
  w.grant(1);
  EXPECT_EQ(w.credits(), 4u);
  EXPECT_THROW(w.grant(1), Error) << "nothing outstanding";
  EXPECT_THROW(w.grant(0xffffffffu), Error);
}

TEST(IbCredits, ReceiverTracksHeadOwedAndOverrun) {
  RingReceiver r(2);
  EXPECT_FALSE(r.hasChunk());
  EXPECT_EQ(r.arrivalSlot(), 0u);
  r.arrived();
  r.arrived();
  EXPECT_THROW(r.arrived(), Error) << "a third chunk in a 2-slot ring without credits back is an overrun";
  EXPECT_EQ(r.headSlot(), 0u);
  r.consume();
  EXPECT_EQ(r.headSlot(), 1u);
  EXPECT_EQ(r.owed(), 1u);
  EXPECT_THROW(r.arrived(), Error) << "consumed but not yet returned still blocks the sender";
  EXPECT_EQ(r.takeOwed(), 1u);
  EXPECT_EQ(r.owed(), 0u);
  r.arrived();  // now there is room
  EXPECT_EQ(r.arrivalSlot(), 1u);
  r.consume();
  r.consume();
  EXPECT_FALSE(r.hasChunk());
  EXPECT_THROW(r.consume(), Error);
}

TEST(IbChunks, CutsMessagesIntoSlotPayloads) {
  ChunkCursor zero(0, 0, 100);
  EXPECT_EQ(zero.count(), 1u) << "a zero-byte message is still one chunk";
  EXPECT_EQ(zero.peek().length, 0u);
  ChunkCursor exact(1, 300, 100);
  EXPECT_EQ(exact.count(), 3u);
  ChunkCursor odd(2, 301, 100);
  EXPECT_EQ(odd.count(), 4u);
  size_t total = 0;
  for (uint32_t i = 0; !odd.done(); odd.advance(), ++i) {
    Chunk c = odd.peek();
    EXPECT_EQ(c.index, i);
    EXPECT_EQ(c.offset, i * 100u);
    total += c.length;
  }
  EXPECT_EQ(total, 301u);
  EXPECT_THROW(ChunkCursor(0, 10, 0), Error);
}

// The slot header as ib_chunks.hpp documents it (little-endian: sequence u64, total bytes u64, chunk index u32,
// chunk count u32, payload bytes u32, magic u32), both ways, against bytes written out by hand.
TEST(IbChunks, SlotHeaderIsTheDocumentedLayout) {
  const uint8_t kWire[32] = {
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  //  0 sequence 0x0102030405060708
      0x03, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00,  //  8 total bytes 2^20 + 3
      0x02, 0x00, 0x00, 0x00,                          // 16 chunk index 2
      0x09, 0x00, 0x00, 0x00,                          // 20 chunk count 9
      0x00, 0x00, 0x02, 0x00,                          // 24 payload bytes 128 KiB
      0x43, 0x48, 0x4e, 0x4b,                          // 28 magic "CHNK"
  };
  SlotHeader h;
  h.sequence = 0x0102030405060708ull;
  h.totalBytes = (1u << 20) + 3;
  h.chunk = 2;
  h.chunks = 9;
  h.bytes = 128 * 1024;
  uint8_t slot[40];
  std::memset(slot, 0xcc, sizeof(slot));
  writeSlotHeader(slot, h);
  for (size_t i = 0; i < 32; ++i) EXPECT_EQ(slot[i], kWire[i]) << "byte " << i;
  for (size_t i = 32; i < sizeof(slot); ++i) EXPECT_EQ(slot[i], 0xcc) << "wrote past the header at " << i;
  SlotHeader back = readSlotHeader(kWire);
  EXPECT_EQ(back.sequence, 0x0102030405060708ull);
  EXPECT_EQ(back.totalBytes, (1u << 20) + 3);
  EXPECT_EQ(back.chunk, 2u);
  EXPECT_EQ(back.chunks, 9u);
  EXPECT_EQ(back.bytes, 128u * 1024);
  EXPECT_EQ(back.magic, 0x4b4e4843u);
}

TEST(IbChunks, CursorHeadersDescribeEachChunk) {
  ChunkCursor c(5, 250, 100);
  const uint32_t lengths[] = {100, 100, 50};
  for (uint32_t i = 0; i < 3; ++i, c.advance()) {
    SlotHeader h = c.header();
    EXPECT_EQ(h.sequence, 5u);
    EXPECT_EQ(h.totalBytes, 250u);
    EXPECT_EQ(h.chunk, i);
    EXPECT_EQ(h.chunks, 3u);
    EXPECT_EQ(h.bytes, lengths[i]);
    EXPECT_EQ(h.magic, kSlotMagic);
  }
  EXPECT_TRUE(c.done());
}

// A landed chunk is bytes a peer wrote: each way it can disagree with the receive at the head of the queue is an
// error naming both ranks and what disagrees, a size disagreement a usage error, the rest protocol errors.
TEST(IbChunks, CheckRejectsEveryMismatchClearly) {
  ChunkCursor expect(5, 250, 100);
  const SlotHeader good = expect.header();
  EXPECT_NO_THROW(checkChunk(good, expect, 0, 1));
  auto rejected = [&](SlotHeader h, const ChunkCursor& cur, ternResult_t code, const std::string& words) {
    try {
      checkChunk(h, cur, 0, 1);
      ADD_FAILURE() << "accepted; expected: " << words;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  SlotHeader h = good;
  h.magic = 0;
  rejected(h, expect, ternInternalError, "rank 0: damaged chunk header from rank 1");
  h = good;
  h.magic = kSlotMagic ^ 0x80000000u;
  rejected(h, expect, ternInternalError, "damaged chunk header");
  h = good;
  h.sequence = 6;
  rejected(h, expect, ternInternalError, "stream from rank 1 out of step (message 6, expected 5)");
  h = good;
  h.totalBytes = 251;
  rejected(h, expect, ternInvalidUsage, "rank 1 sent a message of 251 bytes where 250 were expected");
  rejected(good, ChunkCursor(5, 249, 100), ternInvalidUsage, "rank 1 sent a message of 250 bytes where 249");
  h = good;
  h.chunk = 1;
  rejected(h, expect, ternInternalError, "chunk 1/3 (100 bytes) from rank 1 where chunk 0/3 (100 bytes)");
  h = good;
  h.chunks = 4;
  rejected(h, expect, ternInternalError, "protocol error");
  h = good;
  h.bytes = 99;
  rejected(h, expect, ternInternalError, "chunk 0/3 (99 bytes)");
  // The last, short chunk must carry exactly the remainder.
  ChunkCursor last(5, 250, 100);
  last.advance();
  last.advance();
  h = last.header();
  EXPECT_NO_THROW(checkChunk(h, last, 0, 1));
  h.bytes = 100;
  rejected(h, last, ternInternalError, "chunk 2/3 (100 bytes) from rank 1 where chunk 2/3 (50 bytes)");
}

TEST(IbChunks, ImmediatesEncodeKindAndValue) {
  EXPECT_EQ(encodeImm(ImmKind::kData, 0), 0x00000000u);
  EXPECT_EQ(encodeImm(ImmKind::kData, 7), 0x00000007u);
  EXPECT_EQ(encodeImm(ImmKind::kCredits, 12), 0x8000000cu);
  EXPECT_EQ(encodeImm(ImmKind::kData, 0x7fffffffu), 0x7fffffffu);
  EXPECT_EQ(encodeImm(ImmKind::kCredits, 0x7fffffffu), 0xffffffffu);
  EXPECT_EQ(immKind(0x00000007u), ImmKind::kData);
  EXPECT_EQ(immValue(0x00000007u), 7u);
  EXPECT_EQ(immKind(0x8000000cu), ImmKind::kCredits);
  EXPECT_EQ(immValue(0x8000000cu), 12u);
  EXPECT_EQ(immKind(0x80000000u), ImmKind::kCredits);
  EXPECT_EQ(immValue(0x80000000u), 0u);
  EXPECT_EQ(immValue(0xffffffffu), 0x7fffffffu);
  EXPECT_THROW(encodeImm(ImmKind::kData, 0x80000000u), Error);
  EXPECT_THROW(encodeImm(ImmKind::kCredits, 0xffffffffu), Error);
}

// The whole protocol between one sender and one receiver, with the "network" delivering chunk writes and credit
// returns after random delays, and the receiver posting receives late: bytes arrive intact and in order, and the
// receiver never sees a slot overwritten before it consumed it.
TEST(IbFlow, SimulatedExchangeDeliversEverythingInOrder) {
  const uint32_t kSlots = 4;
  const size_t kPayload = 64;
  std::mt19937 rng(1234);
  std::vector<size_t> sizes;
  for (int i = 0; i < 200; ++i) sizes.push_back(rng() % 400);  // 0..399 bytes: 1..7 chunks
  std::vector<std::vector<uint8_t>> messages;
  for (size_t m = 0; m < sizes.size(); ++m) {
    std::vector<uint8_t> v(sizes[m]);
    // A hash of (message, byte), not a ramp: a ramp repeats every 256 bytes (4 chunks here) and would not see a
    // chunk landing 4 slots off.
    for (size_t i = 0; i < v.size(); ++i) {
      uint64_t x = (m << 32 | i) * 0x9e3779b97f4a7c15ull;
      v[i] = static_cast<uint8_t>((x ^ (x >> 29)) >> 24);
    }
    messages.push_back(v);
  }

  std::vector<std::vector<char>> ring(kSlots, std::vector<char>(kSlotHeaderBytes + kPayload));
  std::vector<bool> slotFull(kSlots, false);
  CreditWindow window(kSlots);
  RingReceiver receiver(kSlots);
  std::deque<uint32_t> inFlightChunks;   // slots written, completion not yet seen by the receiver
  std::deque<uint32_t> inFlightCredits;  // credit returns on the wire

  size_t sendMsg = 0, recvMsg = 0, postedRecvs = 0;
  ChunkCursor sendCursor(0, sizes[0], kPayload);
  std::vector<ChunkCursor> recvCursors;
  std::vector<std::vector<uint8_t>> received(sizes.size());

  for (int step = 0; recvMsg < sizes.size(); ++step) {
    ASSERT_LT(step, 1000000) << "no progress: deadlock";
    switch (rng() % 4) {
      case 0:  // sender writes a chunk if it has a credit
        if (sendMsg < sizes.size() && window.canSend()) {
          uint32_t slot = window.take();
          ASSERT_FALSE(slotFull[slot]) << "sender overwrote an unconsumed slot";
          Chunk c = sendCursor.peek();
          writeSlotHeader(ring[slot].data(), sendCursor.header());
          std::memcpy(ring[slot].data() + kSlotHeaderBytes, messages[sendMsg].data() + c.offset, c.length);
          slotFull[slot] = true;
          inFlightChunks.push_back(slot);
          sendCursor.advance();
          if (sendCursor.done() && ++sendMsg < sizes.size())
            sendCursor = ChunkCursor(sendMsg, sizes[sendMsg], kPayload);
        }
        break;
      case 1:  // the network delivers the oldest chunk's completion
        if (!inFlightChunks.empty()) {
          ASSERT_EQ(inFlightChunks.front(), receiver.arrivalSlot());
          receiver.arrived();
          inFlightChunks.pop_front();
        }
        break;
      case 2:  // the application posts another receive (late, sometimes)
        if (postedRecvs < sizes.size() && recvCursors.size() - (recvMsg) < 3) {
          recvCursors.emplace_back(postedRecvs, sizes[postedRecvs], kPayload);
          ++postedRecvs;
        }
        break;
      case 3: {  // the receiver consumes what it can, returns credits; the network delivers a credit return
        while (receiver.hasChunk() && recvMsg < recvCursors.size()) {
          ChunkCursor& cur = recvCursors[recvMsg];
          uint32_t slot = receiver.headSlot();
          SlotHeader h = readSlotHeader(ring[slot].data());
          checkChunk(h, cur, 1, 0);
          Chunk c = cur.peek();
          received[recvMsg].insert(received[recvMsg].end(), ring[slot].data() + kSlotHeaderBytes,
                                   ring[slot].data() + kSlotHeaderBytes + c.length);
          slotFull[slot] = false;
          receiver.consume();
          cur.advance();
          if (cur.done()) ++recvMsg;
        }
        if (receiver.owed() > 0) inFlightCredits.push_back(receiver.takeOwed());
        if (!inFlightCredits.empty() && rng() % 2 == 0) {
          window.grant(inFlightCredits.front());
          inFlightCredits.pop_front();
        }
        break;
      }
    }
  }
  for (size_t m = 0; m < sizes.size(); ++m) ASSERT_EQ(received[m], messages[m]) << "message " << m;
}

}  // namespace
}  // namespace tern::ib
