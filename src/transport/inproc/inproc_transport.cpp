#include "transport/inproc/inproc_transport.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "base/error.hpp"

namespace tern {

namespace {

struct Posted {
  char* data;
  size_t bytes;
  Transfer* transfer;
};

struct Mailbox {
  std::mutex mutex;
  std::deque<Posted> sends;
  std::deque<Posted> recvs;
};

struct RankState {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<Transfer*> completed;  // handed over by whoever matched, marked done by the owner
};

}  // namespace

class InprocGroup {
 public:
  explicit InprocGroup(int n) : n_(n), mailboxes_(static_cast<size_t>(n) * n), ranks_(n) {}

  int size() const { return n_; }
  Mailbox& mailbox(int src, int dst) { return mailboxes_[static_cast<size_t>(src) * n_ + dst]; }
  RankState& rank(int r) { return ranks_[r]; }

  void complete(int owner, Transfer* t) {
    RankState& s = ranks_[owner];
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      s.completed.push_back(t);
    }
    s.changed.notify_all();
  }

  // Pops matched pairs off the mailbox and copies them; called after every post. The copy runs under the mailbox
  // lock and only while the group is not aborted, so once a rank has passed through the locks of its own mailboxes
  // after the abort (quiesce) no copy from or to its buffers is in progress or can start: its call may then return
  // and free them.
  void match(int src, int dst) {
    Mailbox& m = mailbox(src, dst);
    size_t sentBytes = 0, expectedBytes = 0;
    for (;;) {
      Posted send, recv;
      {
        std::lock_guard<std::mutex> lock(m.mutex);
        if (aborted_.load() || m.sends.empty() || m.recvs.empty()) return;
        send = m.sends.front();
        recv = m.recvs.front();
        if (send.bytes != recv.bytes) {
          sentBytes = send.bytes;
          expectedBytes = recv.bytes;
          break;
        }
        m.sends.pop_front();
        m.recvs.pop_front();
        if (send.bytes > 0) std::memcpy(recv.data, send.data, send.bytes);
      }
      complete(src, send.transfer);
      complete(dst, recv.transfer);
    }
    // Outside the mailbox lock: abort takes the abort and rank locks, never while a mailbox lock is held.
    abort(format("rank %d sent a message of %zu bytes to rank %d, which expected %zu (did the ranks call the same "
                 "collective with the same count and datatype?)",
                 src, sentBytes, dst, expectedBytes),
          ternInvalidUsage);
  }

  void abort(const std::string& reason, ternResult_t code = ternRemoteError) {
    {
      std::lock_guard<std::mutex> lock(abortMutex_);
      if (aborted_.load()) return;
      abortReason_ = reason;
      abortCode_ = code;
      aborted_.store(true);
    }
    for (auto& r : ranks_) {
      std::lock_guard<std::mutex> lock(r.mutex);
      r.changed.notify_all();
    }
  }

  // Waits out any copy in progress on the rank's mailboxes (its sends: row, its receives: column). Called by the
  // rank after the abort flag is set, before its call returns; a match that takes one of these locks later sees the
  // flag and copies nothing.
  void quiesce(int rank) {
    for (int peer = 0; peer < n_; ++peer) {
      { std::lock_guard<std::mutex> lock(mailbox(rank, peer).mutex); }
      { std::lock_guard<std::mutex> lock(mailbox(peer, rank).mutex); }
    }
  }

  void throwIfAborted(int rank) {
    if (!aborted_.load()) return;
    quiesce(rank);
    std::lock_guard<std::mutex> lock(abortMutex_);
    throwError(abortCode_, "rank %d: communicator aborted: %s", rank, abortReason_.c_str());
  }
  bool aborted() const { return aborted_.load(); }

 private:
  int n_;
  std::vector<Mailbox> mailboxes_;
  std::vector<RankState> ranks_;
  std::mutex abortMutex_;  // guards the reason and code; aborted_ is set under it, after them
  std::atomic<bool> aborted_{false};
  std::string abortReason_;
  ternResult_t abortCode_ = ternRemoteError;
};

namespace {

// Groups are found by secret while ranks join; the registry holds them weakly so they die with their last rank.
std::mutex registryMutex;
std::map<std::string, std::weak_ptr<InprocGroup>>& registry() {
  static std::map<std::string, std::weak_ptr<InprocGroup>> r;
  return r;
}

}  // namespace

std::unique_ptr<InprocTransport> InprocTransport::join(const Secret& secret, int rank, int nranks) {
  std::lock_guard<std::mutex> lock(registryMutex);
  auto& slot = registry()[secret.hex() + "/" + std::to_string(nranks)];
  std::shared_ptr<InprocGroup> group = slot.lock();
  if (!group) {
    group = std::make_shared<InprocGroup>(nranks);
    slot = group;
  }
  // Drop registry entries whose groups are gone, so long test runs do not accumulate them.
  for (auto it = registry().begin(); it != registry().end();) {
    it = it->second.expired() ? registry().erase(it) : std::next(it);
  }
  return std::unique_ptr<InprocTransport>(new InprocTransport(group, rank));
}

InprocTransport::~InprocTransport() = default;

void InprocTransport::startSend(int peer, const ConstMemRef& src, Transfer* transfer) {
  group_->throwIfAborted(rank_);
  transfer->done = false;
  transfer->bytes = src.bytes;
  ++outstanding_;
  Mailbox& m = group_->mailbox(rank_, peer);
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.sends.push_back({const_cast<char*>(static_cast<const char*>(src.data)), src.bytes, transfer});
  }
  group_->match(rank_, peer);
}

void InprocTransport::startRecv(int peer, const MemRef& dst, Transfer* transfer) {
  group_->throwIfAborted(rank_);
  transfer->done = false;
  transfer->bytes = dst.bytes;
  ++outstanding_;
  Mailbox& m = group_->mailbox(peer, rank_);
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.recvs.push_back({static_cast<char*>(dst.data), dst.bytes, transfer});
  }
  group_->match(peer, rank_);
}

int InprocTransport::progress(int waitMs) {
  RankState& s = group_->rank(rank_);
  std::vector<Transfer*> done;
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    if (s.completed.empty() && waitMs > 0) {
      s.changed.wait_for(lock, std::chrono::milliseconds(waitMs > 100 ? 100 : waitMs));
    }
    done.swap(s.completed);
  }
  group_->throwIfAborted(rank_);
  for (Transfer* t : done) t->done = true;
  outstanding_ -= done.size();
  return static_cast<int>(done.size());
}

// Also called by a rank whose own call failed, before it returns: its buffers must be out of every copy by then.
void InprocTransport::abort(const std::string& reason) {
  group_->abort(reason);
  group_->quiesce(rank_);
}

}  // namespace tern
