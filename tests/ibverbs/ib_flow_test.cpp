// Credit accounting and chunk scheduling of the ibverbs data path (src/transport/ibverbs/ib_credits.*,
// ib_chunks.*), simulated without a device: a sender and a receiver exchange chunks through a ring and credits
// through a queue, in adversarial orders, and every byte arrives in order without a slot ever being overwritten.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <random>
#include <vector>

#include "core/error.hpp"
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

TEST(IbCredits, ReturningMoreThanOutstandingIsAProtocolError) {
  CreditWindow w(4);
  w.take();
  EXPECT_THROW(w.grant(2), Error);
  w.grant(1);
  EXPECT_EQ(w.credits(), 4u);
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

TEST(IbChunks, HeaderRoundTripsAndChecks) {
  ChunkCursor send(5, 250, 100), recv(5, 250, 100);
  std::vector<char> slot(kSlotHeaderBytes + 100);
  writeSlotHeader(slot.data(), send.header());
  SlotHeader h = readSlotHeader(slot.data());
  EXPECT_EQ(h.sequence, 5u);
  EXPECT_EQ(h.totalBytes, 250u);
  EXPECT_EQ(h.chunks, 3u);
  EXPECT_EQ(h.bytes, 100u);
  EXPECT_NO_THROW(checkChunk(h, recv, 0, 1));

  ChunkCursor wrongSize(5, 200, 100);
  try {
    checkChunk(h, wrongSize, 0, 1);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ternInvalidUsage);
    EXPECT_NE(std::string(e.what()).find("rank 1 sent a message of 250 bytes where 200"), std::string::npos)
        << e.what();
  }
  ChunkCursor wrongSeq(6, 250, 100);
  EXPECT_THROW(checkChunk(h, wrongSeq, 0, 1), Error);
  h.magic = 0;
  EXPECT_THROW(checkChunk(h, recv, 0, 1), Error);
}

TEST(IbChunks, ImmediatesEncodeKindAndValue) {
  uint32_t d = encodeImm(ImmKind::kData, 7);
  uint32_t c = encodeImm(ImmKind::kCredits, 12);
  EXPECT_EQ(immKind(d), ImmKind::kData);
  EXPECT_EQ(immValue(d), 7u);
  EXPECT_EQ(immKind(c), ImmKind::kCredits);
  EXPECT_EQ(immValue(c), 12u);
  EXPECT_THROW(encodeImm(ImmKind::kData, 0x80000000u), Error);
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
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(m * 31 + i);
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
