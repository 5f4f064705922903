#include "core/bootstrap.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace tern {

namespace {

constexpr uint32_t kJoinMagic = 0x4a4e5254;  // "TRNJ"
constexpr uint32_t kProtocolVersion = 1;

struct WireAddress {
  uint32_t length = 0;
  uint8_t bytes[sizeof(sockaddr_in6)] = {};
  void set(const SocketAddress& a) {
    length = a.length;
    std::memcpy(bytes, &a.storage, a.length);
  }
  SocketAddress get() const {
    SocketAddress a;
    a.length = std::min<uint32_t>(length, sizeof(bytes));
    std::memcpy(&a.storage, bytes, a.length);
    return a;
  }
};

struct JoinMessage {
  uint32_t magic = kJoinMagic;
  uint32_t version = kProtocolVersion;
  Secret secret;
  int32_t rank = -1;
  int32_t nranks = 0;
  WireAddress listener;
  char hostId[128] = {};
};

struct JoinReply {
  uint32_t magic = kJoinMagic;
  int32_t status = ternSuccess;
  int32_t nranks = 0;
  char message[200] = {};
};

struct PeerEntry {
  WireAddress listener;
  char hostId[128] = {};
};

void copyString(char* dst, size_t cap, const std::string& s) {
  const size_t n = s.copy(dst, cap - 1);  // at most cap - 1 bytes: the zero fill below always terminates
  std::memset(dst + n, 0, cap - n);
}

void rejectJoin(int fd, ternResult_t code, const std::string& why, Clock::time_point deadline) {
  JoinReply reply;
  reply.status = code;
  copyString(reply.message, sizeof(reply.message), why);
  try {
    sendExact(fd, &reply, sizeof(reply), deadline, nullptr, "bootstrap reject");
  } catch (const Error&) {
  }
}

void serveRoot(Fd listener, Secret secret, int expected, int timeoutSec) {
  auto deadline = Clock::now() + std::chrono::seconds(timeoutSec);
  std::vector<Fd> members;
  std::vector<JoinMessage> joins;
  try {
    while (expected == 0 || static_cast<int>(joins.size()) < expected) {
      Fd conn = acceptOne(listener.get(), deadline, nullptr);
      JoinMessage msg;
      try {
        // A short per-connection deadline so a silent stranger cannot stall the root.
        auto msgDeadline = std::min(deadline, Clock::now() + std::chrono::seconds(10));
        recvExact(conn.get(), &msg, sizeof(msg), msgDeadline, nullptr, "bootstrap root: read join");
      } catch (const Error& e) {
        TERN_LOG(kWarn, kInit, -1, "bootstrap root: dropped a connection: %s", e.what());
        continue;
      }
      if (msg.magic != kJoinMagic || !(msg.secret == secret)) {
        TERN_LOG(kWarn, kInit, -1, "bootstrap root: dropped a connection that did not present the job secret");
        continue;
      }
      if (msg.version != kProtocolVersion) {
        rejectJoin(conn.get(), ternInvalidUsage, "tern version mismatch between ranks", deadline);
        continue;
      }
      if (expected == 0) expected = msg.nranks;
      if (msg.nranks != expected || msg.rank < 0 || msg.rank >= expected) {
        rejectJoin(conn.get(), ternInvalidArgument,
                   format("rank %d / nranks %d does not fit a job of %d ranks", msg.rank, msg.nranks, expected),
                   deadline);
        continue;
      }
      bool duplicate =
          std::any_of(joins.begin(), joins.end(), [&](const JoinMessage& j) { return j.rank == msg.rank; });
      if (duplicate) {
        rejectJoin(conn.get(), ternInvalidArgument, format("rank %d joined twice", msg.rank), deadline);
        continue;
      }
      TERN_LOG(kTrace, kInit, -1, "bootstrap root: rank %d joined (%zu/%d)", msg.rank, joins.size() + 1, expected);
      joins.push_back(msg);
      members.push_back(std::move(conn));
    }
    std::vector<PeerEntry> table(expected);
    for (const auto& j : joins) {
      table[j.rank].listener = j.listener;
      std::memcpy(table[j.rank].hostId, j.hostId, sizeof(j.hostId));
    }
    JoinReply reply;
    reply.nranks = expected;
    for (auto& m : members) {
      sendExact(m.get(), &reply, sizeof(reply), deadline, nullptr, "bootstrap root: reply");
      sendExact(m.get(), table.data(), table.size() * sizeof(PeerEntry), deadline, nullptr, "bootstrap root: table");
    }
  } catch (const Error& e) {
    TERN_LOG(kWarn, kInit, -1, "bootstrap root: giving up after %zu of %d ranks joined: %s", joins.size(), expected,
             e.what());
  }
}

}  // namespace

void startBootstrapRoot(Fd listener, const Secret& secret, int expectedRanks, int timeoutSec) {
  std::thread(serveRoot, std::move(listener), secret, expectedRanks, timeoutSec).detach();
}

UniqueIdData createTcpUniqueId() {
  UniqueIdData id;
  id.kind = RendezvousKind::kTcp;
  id.secret = Secret::random();
  SocketAddress local = chooseLocalAddress(knobs().socketIfname, nullptr);
  SocketAddress bound;
  Fd listener = listenOn(local, &bound);
  id.setRootAddress(bound);
  TERN_LOG(kInfo, kInit, -1, "bootstrap root listening on %s (%s)", bound.toString().c_str(),
           interfaceNameOf(bound).c_str());
  startBootstrapRoot(std::move(listener), id.secret, 0, knobs().timeoutSec);
  return id;
}

BootstrapResult joinBootstrap(const UniqueIdData& id, int rank, int nranks, const std::string& hostId,
                              Clock::time_point deadline, const std::atomic<bool>* abortFlag) {
  SocketAddress root = id.rootAddress();
  BootstrapResult result;
  SocketAddress local = chooseLocalAddress(knobs().socketIfname, &root);
  SocketAddress bound;
  result.listener = listenOn(local, &bound);

  Fd conn = connectTo(root, deadline, abortFlag);
  JoinMessage msg;
  msg.secret = id.secret;
  msg.rank = rank;
  msg.nranks = nranks;
  msg.listener.set(bound);
  copyString(msg.hostId, sizeof(msg.hostId), hostId);
  sendExact(conn.get(), &msg, sizeof(msg), deadline, abortFlag, "bootstrap: send join to root");
  JoinReply reply;
  std::string where = "bootstrap: wait for all ranks at root " + root.toString();
  try {
    recvExact(conn.get(), &reply, sizeof(reply), deadline, abortFlag, where.c_str());
  } catch (const Error& e) {
    throwError(e.code(), "%s (wrong secret, or the root gave up before all %d ranks joined)", e.what(), nranks);
  }
  if (reply.magic != kJoinMagic) throwError(ternRemoteError, "bootstrap: root sent a malformed reply");
  if (reply.status != ternSuccess) {
    throwError(static_cast<ternResult_t>(reply.status), "bootstrap: root refused rank %d: %s", rank, reply.message);
  }
  std::vector<PeerEntry> table(nranks);
  recvExact(conn.get(), table.data(), table.size() * sizeof(PeerEntry), deadline, abortFlag, where.c_str());
  result.peers.resize(nranks);
  for (int r = 0; r < nranks; ++r) {
    result.peers[r].address = table[r].listener.get();
    result.peers[r].hostId = std::string(table[r].hostId, strnlen(table[r].hostId, sizeof(table[r].hostId)));
  }
  return result;
}

}  // namespace tern
