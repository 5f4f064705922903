// The TCP transport's decoders (src/transport/tcp/tcp_transport.cpp), through a real TcpTransport over loopback:
// the harness plays rank 0 of a 2-rank job against rank 1's acceptor. The fuzzer's bytes become rank 0's hello
// (magic, version, ranks, socket index) and then, over the authenticated connection, a message header and payload
// for a receive rank 1 has posted. The harness knows the secret and signs its proof, so the fuzzer reaches the
// checks behind authentication. In the striped mode (flags & 8) the two ranks are on different hosts with two
// sockets each and the receive is large enough to be striped: the fuzzer's bytes become a run of chunk headers and
// payloads, each on a socket of its choice (optionally with the fields of a real chunk, so that it reaches the
// copies). Garbage must end in tern::Error (or a dropped stranger), never a bad copy.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "fuzz_util.hpp"
#include "transport/bootstrap.hpp"
#include "transport/tcp/tcp_transport.hpp"

using namespace tern;
namespace wire = tern::tcp_wire;

namespace {

const Secret& secret() {
  static const Secret s = Secret::random();
  return s;
}

Clock::time_point soon() { return Clock::now() + std::chrono::seconds(2); }

// One initiator handshake; true if the acceptor took the connection.
bool handshake(int fd, const wire::Hello& hello, const JobId& jobId) {
  sendExact(fd, &hello, sizeof(hello), soon(), nullptr, "fuzz: hello");
  wire::Challenge challenge;
  recvExact(fd, &challenge, sizeof(challenge), soon(), nullptr, "fuzz: challenge");
  wire::Proof proof;
  proof.proof = wire::initiatorProof(secret(), jobId, hello, challenge.nonce);
  sendExact(fd, &proof, sizeof(proof), soon(), nullptr, "fuzz: proof");
  wire::Accept accept;
  recvExact(fd, &accept, sizeof(accept), soon(), nullptr, "fuzz: accept");
  return accept.magic == wire::kAcceptMagic;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::setenv("TERN_SOCKET_IFNAME", "lo", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Bytes in(data, size);
  const uint8_t flags = in.take<uint8_t>();
  BootstrapResult boot;
  SocketAddress bound;
  boot.listener = listenOn(SocketAddress::parse("127.0.0.1:0"), &bound);
  boot.peers.resize(2);
  boot.peers[0].address = bound;  // rank 0 (the harness) is never connected to: it initiates
  boot.peers[1].address = bound;
  const bool stripedMode = (flags & 8) != 0;
  const int sockets = stripedMode ? 2 : 1;
  boot.peers[0].hostId = stripedMode ? "fuzz-host-0" : "fuzz-host";
  boot.peers[1].hostId = "fuzz-host";
  boot.jobId[0] = 42;
  const size_t recvBytes =
      stripedMode ? wire::kStripeThreshold + in.take<uint16_t>() * size_t{8} : in.take<uint16_t>() % 8192;
  std::unique_ptr<TcpTransport> rank1;
  std::thread acceptor([&] {
    try {
      rank1 = TcpTransport::connect(1, 2, boot, secret(), sockets, soon(), nullptr);
    } catch (const Error&) {
    }
  });
  wire::Hello hello;
  hello.fromRank = 0;
  hello.toRank = 1;
  hello.socketIndex = 0;
  hello.nonce = freshNonce();
  bool connected = false;
  Fd conn;
  try {
    if (flags & 1) {
      // A forged hello first; the acceptor must drop it and still take the real one after.
      wire::Hello forged = in.take<wire::Hello>();
      Fd stranger = connectTo(bound, soon(), nullptr);
      if (handshake(stranger.get(), forged, boot.jobId)) conn = std::move(stranger);
      connected = static_cast<bool>(conn);
    }
  } catch (const Error&) {
  }
  try {
    if (!connected) {
      conn = connectTo(bound, soon(), nullptr);
      connected = handshake(conn.get(), hello, boot.jobId);
    }
  } catch (const Error&) {
  }
  Fd second;  // the striped mode's socket 1
  if (stripedMode && connected) {
    try {
      wire::Hello hello1 = hello;
      hello1.socketIndex = 1;
      hello1.nonce = freshNonce();
      second = connectTo(bound, soon(), nullptr);
      if (!handshake(second.get(), hello1, boot.jobId)) second = Fd();
    } catch (const Error&) {
      second = Fd();
    }
  }
  acceptor.join();
  if (!rank1 || !connected) return 0;
  if (stripedMode) {
    if (!second) return 0;
    std::vector<uint8_t> buffer(recvBytes);
    Transfer transfer;
    rank1->postRecv(0, buffer.data(), buffer.size(), &transfer);
    // Rank 1 reads while the frames go out (they may be more than the sockets' buffers hold).
    std::thread reader([&] {
      const auto end = Clock::now() + std::chrono::seconds(4);
      try {
        while (!transfer.done && Clock::now() < end) rank1->progress(10);
      } catch (const Error&) {
      }
    });
    const size_t maxParts = wire::stripedChunkCount(recvBytes, 2);
    static const std::vector<uint8_t> filler(wire::kMaxStripeChunk, 0x5a);
    size_t budget = recvBytes + 65536;  // payload bytes this input may send in all
    try {
      while (in.size() > 0 && budget > 0) {
        const uint8_t sel = in.take<uint8_t>();
        TcpTransport::Header header = in.take<TcpTransport::Header>();
        if (sel & 2) {  // a real chunking's fields (one a sender may choose), its count and index fuzzed
          auto parts = static_cast<uint32_t>(1 + header.parts % maxParts);
          if (wire::chunkBytes(recvBytes, parts) == 0) parts = 1;
          const size_t chunk = wire::chunkBytes(recvBytes, parts);
          header.sequence = 0;
          header.totalBytes = recvBytes;
          header.parts = parts;
          header.part %= parts;
          header.partBytes = std::min(chunk, recvBytes - header.part * chunk);
        }
        size_t payload =
            (sel & 4) ? static_cast<size_t>(std::min<uint64_t>(header.partBytes, filler.size())) : in.take<uint16_t>();
        payload = std::min(payload, budget);
        budget -= payload;
        const int fd = (sel & 1) ? second.get() : conn.get();
        sendExact(fd, &header, sizeof(header), soon(), nullptr, "fuzz: chunk header");
        if (payload > 0) sendExact(fd, filler.data(), payload, soon(), nullptr, "fuzz: chunk payload");
      }
    } catch (const Error&) {
    }
    conn = Fd();  // end of both streams: rank 1 must finish or fail, never wait for more
    second = Fd();
    reader.join();
    return 0;
  }
  // A message for rank 1's posted receive: fuzzed header, then payload.
  std::vector<uint8_t> buffer(recvBytes);
  Transfer transfer;
  rank1->postRecv(0, buffer.data(), buffer.size(), &transfer);
  TcpTransport::Header header = in.take<TcpTransport::Header>();
  if (flags & 2) {
    header.totalBytes = recvBytes;
    header.partBytes = recvBytes;
    header.parts = 1;
  }
  if (flags & 4) header.sequence = in.take<uint8_t>() % 2;
  try {
    sendExact(conn.get(), &header, sizeof(header), soon(), nullptr, "fuzz: header");
    const size_t n = in.size();
    if (n > 0) sendExact(conn.get(), in.data(), n, soon(), nullptr, "fuzz: payload");
  } catch (const Error&) {
  }
  conn = Fd();  // end of stream: rank 1 must finish or fail, never wait for more
  try {
    const auto end = Clock::now() + std::chrono::seconds(2);
    while (!transfer.done && Clock::now() < end) rank1->progress(10);
  } catch (const Error&) {
  }
  return 0;
}
