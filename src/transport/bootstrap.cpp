#include "transport/bootstrap.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "base/env.hpp"
#include "base/error.hpp"
#include "base/host_id.hpp"
#include "base/log.hpp"

namespace tern {

namespace bootstrap_wire {

void Address::set(const SocketAddress& a) {
  length = std::min<uint32_t>(a.length, sizeof(bytes));
  std::memcpy(bytes, &a.storage, length);
}

bool Address::get(SocketAddress* out) const {
  *out = SocketAddress();
  if (length < sizeof(sockaddr_in) || length > sizeof(bytes)) return false;
  std::memcpy(&out->storage, bytes, length);
  out->length = length;
  if (out->family() == AF_INET) return true;
  return out->family() == AF_INET6 && length == sizeof(sockaddr_in6);
}

Mac rootProof(const Secret& secret, const Nonce& rankNonce, const Nonce& rootNonce) {
  return MacBuilder(secret, "tern/bootstrap/v2/root-to-rank").addValue(rankNonce).addValue(rootNonce).finish();
}

Mac joinProof(const Secret& secret, const Nonce& rankNonce, const Nonce& rootNonce, const Join& join) {
  return MacBuilder(secret, "tern/bootstrap/v2/rank-to-root")
      .addValue(rankNonce)
      .addValue(rootNonce)
      .add(&join, offsetof(Join, proof))
      .finish();
}

Mac statusProof(const Secret& secret, const Nonce& rankNonce, const Nonce& rootNonce, const Status& status) {
  return MacBuilder(secret, "tern/bootstrap/v2/status")
      .addValue(rankNonce)
      .addValue(rootNonce)
      .add(&status, offsetof(Status, proof))
      .finish();
}

Mac tableProof(const Secret& secret, const Nonce& rankNonce, const Nonce& rootNonce, const TableHeader& header,
               const PeerEntry* entries, size_t count) {
  return MacBuilder(secret, "tern/bootstrap/v2/table")
      .addValue(rankNonce)
      .addValue(rootNonce)
      .addValue(header)
      .add(entries, count * sizeof(PeerEntry))
      .finish();
}

}  // namespace bootstrap_wire

namespace {

namespace wire = bootstrap_wire;

void copyString(char* dst, size_t cap, const std::string& s) {
  const size_t n = s.copy(dst, cap - 1);  // at most cap - 1 bytes: the zero fill below always terminates
  std::memset(dst + n, 0, cap - n);
}

// A fixed-size char field from the wire, which need not be terminated.
std::string fieldString(const char* field, size_t cap) { return std::string(field, strnlen(field, cap)); }

thread_local std::string fileToRemoveAfterNextRoot;

// One connection to the root that has not (yet) proven it belongs to the job.
struct Pending {
  std::unique_ptr<FrameConn> conn;
  Nonce rankNonce{};
  Nonce rootNonce{};
  bool helloSeen = false;
  bool closeWhenFlushed = false;  // refused: the reason is on its way, then the connection goes
};

struct Member {
  std::unique_ptr<FrameConn> conn;
  Nonce rankNonce{};
  Nonce rootNonce{};
  wire::Join join;
};

class RootServer {
 public:
  RootServer(Fd listener, const Secret& secret, int expected, int timeoutSec, std::string fileToRemove,
             const std::atomic<bool>* stop)
      : listener_(std::move(listener)),
        fileToRemove_(std::move(fileToRemove)),
        secret_(secret),
        expected_(expected),
        deadline_(Clock::now() + std::chrono::seconds(timeoutSec)),
        stop_(stop) {}

  void run() {
    setNonBlocking(listener_.get(), true);
    while (expected_ == 0 || static_cast<int>(members_.size()) < expected_) {
      if (Clock::now() >= deadline_) throwError(ternTimeout, "timed out (TERN_TIMEOUT)");
      if (stop_->load(std::memory_order_acquire)) throwError(ternRemoteError, "stopped by its owner");
      pollOnce();
    }
    // Before any rank gets its table: a rank that has its table may start the next job, which must not find
    // this job's secret file.
    removeFile();
    sendTable();
    if (dropped_ > 0) {
      TERN_LOG(kInfo, kInit, -1, "bootstrap root: dropped %d connection(s) that did not authenticate", dropped_);
    }
  }

  void removeFile() {
    if (!fileToRemove_.empty()) ::unlink(fileToRemove_.c_str());
    fileToRemove_.clear();
  }

  size_t joined() const { return members_.size(); }
  int expected() const { return expected_; }

 private:
  size_t strangerCap() const { return kMaxStrangers + static_cast<size_t>(std::max(expected_, 0)); }

  void pollOnce() {
    std::vector<pollfd> fds;
    fds.push_back({listener_.get(), POLLIN, 0});
    for (auto& p : pending_) fds.push_back({p.conn->fd(), p.conn->pollEvents(), 0});
    for (auto& m : members_) fds.push_back({m.conn->fd(), static_cast<short>(m.conn->pollEvents() | POLLIN), 0});
    Clock::time_point wake = std::min(deadline_, Clock::now() + std::chrono::milliseconds(100));
    for (auto& p : pending_) wake = std::min(wake, p.conn->deadline());
    auto waitMs = std::chrono::duration_cast<std::chrono::milliseconds>(wake - Clock::now()).count();
    int r = ::poll(fds.data(), fds.size(), static_cast<int>(std::max<long long>(waitMs, 0) + 1));
    if (r < 0 && errno != EINTR) throwSystemError("bootstrap root: poll");
    // Members first (their indexes in fds follow the pending ones, which change below). A member sends nothing
    // after its join: readable means it left (or misbehaves), and its rank is free to join again.
    for (size_t i = 0; i < members_.size(); ++i) {
      const short revents = fds[1 + pending_.size() + i].revents;
      if (revents == 0) continue;
      try {
        members_[i].conn->advance();
        if (revents & (POLLIN | POLLHUP | POLLERR)) {
          throwError(ternRemoteError, "connection from %s closed", members_[i].conn->peer().toString().c_str());
        }
      } catch (const Error& e) {
        TERN_LOG(kWarn, kInit, -1, "bootstrap root: rank %d left before the table was sent: %s", members_[i].join.rank,
                 e.what());
        members_.erase(members_.begin() + static_cast<std::ptrdiff_t>(i));
        break;  // fds no longer lines up; the next round serves the rest
      }
    }
    std::vector<bool> ready(pending_.size());
    for (size_t i = 0; i < pending_.size(); ++i) ready[i] = fds[1 + i].revents != 0;
    std::deque<Pending> keep;
    const Clock::time_point now = Clock::now();
    for (size_t i = 0; i < pending_.size(); ++i) {
      Pending& p = pending_[i];
      if (ready[i] && !serve(p)) continue;
      if (p.closeWhenFlushed && p.conn->outputFlushed()) continue;
      if (now >= p.conn->deadline()) {
        TERN_LOG(kTrace, kInit, -1, "bootstrap root: dropped %s: no handshake within the window",
                 p.conn->peer().toString().c_str());
        ++dropped_;
        continue;
      }
      keep.push_back(std::move(p));
    }
    pending_ = std::move(keep);
    if (fds[0].revents != 0) acceptNew();
  }

  void acceptNew() {
    // Bounded per round so that a flood of connections cannot starve the handshakes already under way.
    for (int i = 0; i < 64; ++i) {
      SocketAddress peer;
      bool outOfFds = false;
      Fd fd = acceptNow(listener_.get(), &peer, &outOfFds);
      if (!fd) {
        if (outOfFds) dropOldest();
        return;
      }
      if (pending_.size() >= strangerCap()) dropOldest();
      Pending p;
      p.conn = std::make_unique<FrameConn>(std::move(fd), peer, std::min(deadline_, Clock::now() + kHandshakeWindow));
      p.conn->expect(sizeof(wire::Hello));
      pending_.push_back(std::move(p));
    }
  }

  void dropOldest() {
    if (pending_.empty()) return;
    TERN_LOG(kTrace, kInit, -1, "bootstrap root: too many unauthenticated connections, dropped the oldest (%s)",
             pending_.front().conn->peer().toString().c_str());
    pending_.pop_front();
    ++dropped_;
  }

  // Moves p's handshake on; false when p is finished with (dropped, or now a member).
  bool serve(Pending& p) {
    try {
      if (!p.conn->advance() || p.closeWhenFlushed) return true;
      return handleFrame(p);
    } catch (const Error& e) {
      TERN_LOG(kTrace, kInit, -1, "bootstrap root: dropped a connection: %s", e.what());
      ++dropped_;
      return false;
    }
  }

  bool handleFrame(Pending& p) {
    const std::string from = p.conn->peer().toString();
    if (!p.helloSeen) {
      wire::Hello hello;
      std::memcpy(&hello, p.conn->frame(), sizeof(hello));
      if (hello.magic != wire::kMagic) {
        TERN_LOG(kTrace, kInit, -1, "bootstrap root: dropped %s: not a tern join", from.c_str());
        ++dropped_;
        return false;
      }
      p.helloSeen = true;
      p.rankNonce = hello.nonce;
      wire::Challenge challenge;
      if (hello.version != wire::kVersion) {
        // No proof: tell the other side our version so it can say what is wrong, then hang up.
        p.conn->queue(&challenge, sizeof(challenge));
        p.closeWhenFlushed = true;
        return true;
      }
      p.rootNonce = freshNonce();
      challenge.nonce = p.rootNonce;
      challenge.proof = wire::rootProof(secret_, p.rankNonce, p.rootNonce);
      p.conn->queue(&challenge, sizeof(challenge));
      p.conn->expect(sizeof(wire::Join));
      // The join may arrive within this very call: then no later poll would report it.
      return serve(p);
    }
    wire::Join join;
    std::memcpy(&join, p.conn->frame(), sizeof(join));
    if (join.magic != wire::kMagic || !macEqual(join.proof, wire::joinProof(secret_, p.rankNonce, p.rootNonce, join))) {
      TERN_LOG(kWarn, kInit, -1,
               "bootstrap root: refused a connection from %s: authentication failed (it does not know the job "
               "secret)",
               from.c_str());
      ++dropped_;
      return false;
    }
    std::string why = checkJoin(join);
    if (!why.empty()) {
      TERN_LOG(kWarn, kInit, -1, "bootstrap root: refused rank %d from %s: %s", join.rank, from.c_str(), why.c_str());
      sendStatus(p.conn.get(), p.rankNonce, p.rootNonce, ternInvalidArgument, why);
      p.closeWhenFlushed = true;
      return true;
    }
    if (expected_ == 0) expected_ = join.nranks;
    TERN_LOG(kTrace, kInit, -1, "bootstrap root: rank %d joined from %s (%zu/%d)", join.rank, from.c_str(),
             members_.size() + 1, expected_);
    sendStatus(p.conn.get(), p.rankNonce, p.rootNonce, ternSuccess, "");
    p.conn->advance();
    members_.push_back(Member{std::move(p.conn), p.rankNonce, p.rootNonce, join});
    return false;
  }

  // Empty when the join fits the job; otherwise why not.
  std::string checkJoin(const wire::Join& join) const {
    if (join.nranks < 1 || join.nranks > wire::kMaxRanks) {
      return format("nranks %d is out of range 1..%d", join.nranks, wire::kMaxRanks);
    }
    const int expected = expected_ == 0 ? join.nranks : expected_;
    if (join.nranks != expected || join.rank < 0 || join.rank >= expected) {
      return format("rank %d / nranks %d does not fit a job of %d ranks", join.rank, join.nranks, expected);
    }
    SocketAddress listener;
    if (!join.listener.get(&listener)) return format("rank %d sent a malformed listener address", join.rank);
    for (const auto& m : members_) {
      if (m.join.rank == join.rank) return format("rank %d joined twice", join.rank);
    }
    return "";
  }

  void sendStatus(FrameConn* conn, const Nonce& rankNonce, const Nonce& rootNonce, ternResult_t code,
                  const std::string& why) {
    wire::Status status;
    status.status = code;
    status.nranks = expected_;
    copyString(status.message, sizeof(status.message), why);
    status.proof = wire::statusProof(secret_, rankNonce, rootNonce, status);
    conn->queue(&status, sizeof(status));
  }

  void sendTable() {
    wire::TableHeader header;
    header.nranks = expected_;
    fillRandom(header.jobId.data(), header.jobId.size());
    std::vector<wire::PeerEntry> table(static_cast<size_t>(expected_));
    for (const auto& m : members_) {
      table[m.join.rank].listener = m.join.listener;
      std::memcpy(table[m.join.rank].hostId, m.join.hostId, sizeof(m.join.hostId));
      std::memcpy(table[m.join.rank].machineId, m.join.machineId, sizeof(m.join.machineId));
      table[m.join.rank].cpus = m.join.cpus;
    }
    for (auto& m : members_) {
      Mac proof = wire::tableProof(secret_, m.rankNonce, m.rootNonce, header, table.data(), table.size());
      m.conn->flush(deadline_, stop_);
      const int fd = m.conn->fd();
      sendExact(fd, &header, sizeof(header), deadline_, stop_, "bootstrap root: table");
      sendExact(fd, table.data(), table.size() * sizeof(wire::PeerEntry), deadline_, stop_, "bootstrap root: table");
      sendExact(fd, proof.data(), proof.size(), deadline_, stop_, "bootstrap root: table");
    }
  }

  Fd listener_;
  std::string fileToRemove_;
  Secret secret_;
  int expected_;
  Clock::time_point deadline_;
  std::deque<Pending> pending_;  // oldest first
  std::vector<Member> members_;
  int dropped_ = 0;
  const std::atomic<bool>* stop_;  // raised by the server's owner (BootstrapRoot::stop)
};

void serveRoot(Fd listener, Secret secret, int expected, int timeoutSec, std::string fileToRemove,
               const std::atomic<bool>* stop) {
  RootServer server(std::move(listener), secret, expected, timeoutSec, std::move(fileToRemove), stop);
  try {
    server.run();
  } catch (const std::exception& e) {
    // Not only tern::Error: nothing a stranger sends may take the process down with an uncaught exception.
    if (stop->load(std::memory_order_acquire)) {
      // Its owner is done with it (or the process exits): not a failure of the job.
      TERN_LOG(kTrace, kInit, -1, "bootstrap root: stopped by its owner after %zu of %d ranks joined", server.joined(),
               server.expected());
    } else {
      TERN_LOG(kWarn, kInit, -1, "bootstrap root: giving up after %zu of %d ranks joined: %s", server.joined(),
               server.expected(), e.what());
    }
  }
  server.removeFile();
}

// A frame from the root, with a message naming it when the connection ends first.
void recvFromRoot(int fd, void* data, size_t bytes, Clock::time_point deadline, const std::atomic<bool>* abortFlag,
                  const std::string& what) {
  recvExact(fd, data, bytes, deadline, abortFlag, what.c_str());
}

}  // namespace

void removeFileWhenNextRootIsDone(const std::string& path) { fileToRemoveAfterNextRoot = path; }

BootstrapRoot BootstrapRoot::start(Fd listener, const Secret& secret, int expectedRanks, int timeoutSec) {
  std::string file = std::move(fileToRemoveAfterNextRoot);
  fileToRemoveAfterNextRoot.clear();
  BootstrapRoot root;
  root.shared_ = std::make_shared<Shared>();
  root.ownerPid_ = static_cast<int>(::getpid());
  // The thread holds its own reference, so the flags stay valid for it whatever happens to the handle.
  root.thread_ = std::thread([shared = root.shared_, listener = std::move(listener), secret, expectedRanks, timeoutSec,
                              file = std::move(file)]() mutable {
    serveRoot(std::move(listener), secret, expectedRanks, timeoutSec, std::move(file), &shared->stop);
    shared->done.store(true, std::memory_order_release);
  });
  return root;
}

BootstrapRoot& BootstrapRoot::operator=(BootstrapRoot&& other) noexcept {
  if (this != &other) {
    stop();
    shared_ = std::move(other.shared_);
    thread_ = std::move(other.thread_);
    ownerPid_ = other.ownerPid_;
  }
  return *this;
}

void BootstrapRoot::stop() {
  if (shared_) shared_->stop.store(true, std::memory_order_release);
  wait();
}

void BootstrapRoot::wait() {
  if (!thread_.joinable()) return;
  if (ownerPid_ != static_cast<int>(::getpid())) {
    // A forked child's copy: the thread exists only in the parent, and joining it here would never return.
    thread_.detach();
    return;
  }
  thread_.join();
}

bool BootstrapRoot::finished() const { return !shared_ || shared_->done.load(std::memory_order_acquire); }

namespace {

// The servers that ternGetUniqueId and environment launches start: nobody else can hold their handles.
class LibraryRoots {
 public:
  ~LibraryRoots() {
    // At exit: the servers stop within one poll round, and none is left running while the process tears down.
    std::lock_guard<std::mutex> lock(mutex_);
    roots_.clear();
  }
  void keep(BootstrapRoot root) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(roots_, [](const BootstrapRoot& r) { return r.finished(); });  // joins the done ones
    roots_.push_back(std::move(root));
  }

 private:
  std::mutex mutex_;
  std::vector<BootstrapRoot> roots_;
};

LibraryRoots& libraryRoots() {
  static LibraryRoots roots;
  return roots;
}

}  // namespace

void startBootstrapRoot(Fd listener, const Secret& secret, int expectedRanks, int timeoutSec) {
  // Built after the knobs and the log its servers use (the caller read TERN_TIMEOUT; the log's settings are read
  // here), so destroyed first at exit, stopping the servers while those are still there.
  (void)logEnabled(LogLevel::kTrace, Subsys::kInit);
  LibraryRoots& roots = libraryRoots();
  roots.keep(BootstrapRoot::start(std::move(listener), secret, expectedRanks, timeoutSec));
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
  if (nranks < 1 || nranks > wire::kMaxRanks) {
    throwError(ternInvalidArgument, "bootstrap: nranks %d is out of range 1..%d", nranks, wire::kMaxRanks);
  }
  const SocketAddress root = id.rootAddress();
  const std::string rootName = root.toString();
  BootstrapResult result;
  SocketAddress local = chooseLocalAddress(knobs().socketIfname, &root);
  SocketAddress bound;
  result.listener = listenOn(local, &bound);

  wire::Join join;
  join.rank = rank;
  join.nranks = nranks;
  join.listener.set(bound);
  copyString(join.hostId, sizeof(join.hostId), hostId);
  copyString(join.machineId, sizeof(join.machineId), machineId());
  join.cpus = ownCpuMask();

  Fd conn;
  Nonce rankNonce{}, rootNonce{};
  auto backoff = std::chrono::milliseconds(10);
  // The root drops the oldest unauthenticated connections when strangers crowd it, so a connection lost during
  // the handshake is tried again while there is time. Anything else (a failed proof, a timeout, an abort) is final.
  auto exchange = [&](auto&& io) -> bool {
    try {
      io();
      return true;
    } catch (const Error& e) {
      const bool aborted = abortFlag != nullptr && abortFlag->load();
      if (e.code() != ternRemoteError || aborted || Clock::now() + backoff >= deadline) throw;
      TERN_LOG(kTrace, kInit, rank, "bootstrap: retrying the root at %s: %s", rootName.c_str(), e.what());
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
      return false;
    }
  };
  for (;;) {
    conn = connectTo(root, deadline, abortFlag);
    rankNonce = freshNonce();
    wire::Hello hello;
    hello.nonce = rankNonce;
    wire::Challenge challenge;
    if (!exchange([&] {
          sendExact(conn.get(), &hello, sizeof(hello), deadline, abortFlag, "bootstrap: send hello to root");
          recvFromRoot(conn.get(), &challenge, sizeof(challenge), deadline, abortFlag,
                       "bootstrap: wait for the root's challenge at " + rootName);
        })) {
      continue;
    }
    if (challenge.magic != wire::kMagic) {
      throwError(ternRemoteError, "bootstrap: %s is not a tern root (malformed challenge)", rootName.c_str());
    }
    if (challenge.version != wire::kVersion) {
      throwError(ternInvalidUsage, "bootstrap: tern version mismatch: the root at %s speaks protocol %u, rank %d %u",
                 rootName.c_str(), challenge.version, rank, wire::kVersion);
    }
    rootNonce = challenge.nonce;
    if (!macEqual(challenge.proof, wire::rootProof(id.secret, rankNonce, rootNonce))) {
      throwError(ternRemoteError,
                 "bootstrap: authentication failed: the root at %s did not prove it knows the job secret (a "
                 "different TERN_SECRET than rank %d's, or not this job's root); nothing was sent to it",
                 rootName.c_str(), rank);
    }
    join.proof = wire::joinProof(id.secret, rankNonce, rootNonce, join);
    wire::Status status;
    if (!exchange([&] {
          sendExact(conn.get(), &join, sizeof(join), deadline, abortFlag, "bootstrap: send join to root");
          recvFromRoot(conn.get(), &status, sizeof(status), deadline, abortFlag,
                       "bootstrap: wait for the root's answer at " + rootName);
        })) {
      continue;
    }
    if (status.magic != wire::kMagic ||
        !macEqual(status.proof, wire::statusProof(id.secret, rankNonce, rootNonce, status))) {
      throwError(ternRemoteError,
                 "bootstrap: authentication failed: the root at %s sent an answer without a valid proof",
                 rootName.c_str());
    }
    const std::string message = fieldString(status.message, sizeof(status.message));
    if (status.status < ternSuccess || status.status >= ternNumResults || status.status == ternInProgress) {
      throwError(ternRemoteError, "bootstrap: the root at %s answered with an unknown status %d: %s", rootName.c_str(),
                 status.status, message.c_str());
    }
    if (status.status != ternSuccess) {
      throwError(static_cast<ternResult_t>(status.status), "bootstrap: the root at %s refused rank %d: %s",
                 rootName.c_str(), rank, message.c_str());
    }
    break;
  }

  const std::string where = "bootstrap: wait for all ranks at root " + rootName;
  wire::TableHeader header;
  try {
    recvFromRoot(conn.get(), &header, sizeof(header), deadline, abortFlag, where);
  } catch (const Error& e) {
    throwError(e.code(), "%s (the root gave up before all %d ranks joined?)", e.what(), nranks);
  }
  if (header.magic != wire::kMagic || header.nranks != nranks) {
    throwError(ternRemoteError, "bootstrap: the root at %s sent a table for %d ranks, this rank expects %d",
               rootName.c_str(), header.nranks, nranks);
  }
  std::vector<wire::PeerEntry> table(static_cast<size_t>(nranks));
  recvFromRoot(conn.get(), table.data(), table.size() * sizeof(wire::PeerEntry), deadline, abortFlag, where);
  Mac proof{};
  recvFromRoot(conn.get(), proof.data(), proof.size(), deadline, abortFlag, where);
  if (!macEqual(proof, wire::tableProof(id.secret, rankNonce, rootNonce, header, table.data(), table.size()))) {
    throwError(ternRemoteError, "bootstrap: authentication failed: the table from the root at %s has no valid proof",
               rootName.c_str());
  }
  result.jobId = header.jobId;
  result.peers.resize(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    if (!table[r].listener.get(&result.peers[r].address)) {
      throwError(ternRemoteError, "bootstrap: the root at %s sent a malformed address for rank %d", rootName.c_str(),
                 r);
    }
    result.peers[r].hostId = fieldString(table[r].hostId, sizeof(table[r].hostId));
    result.peers[r].machineId = fieldString(table[r].machineId, sizeof(table[r].machineId));
    result.peers[r].cpus = table[r].cpus;
  }
  return result;
}

bool machineRanksOwnCpus(const BootstrapResult& boot, int rank) {
  std::vector<CpuMask> masks;
  for (const PeerInfo& p : boot.peers) {
    if (p.machineId == boot.peers[static_cast<size_t>(rank)].machineId) masks.push_back(p.cpus);
  }
  return ranksOwnCpus(masks);
}

}  // namespace tern
