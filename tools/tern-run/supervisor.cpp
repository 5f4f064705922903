#include "supervisor.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <system_error>

#include "wait_status.hpp"

namespace tern::run {
namespace {

constexpr size_t kReadChunk = 64 * 1024;
// Drain() reads at most this much per pipe: enough for everything a rank wrote before exiting (a pipe holds 64 KiB
// by default), small enough that a process still writing cannot hold the loop.
constexpr size_t kDrainLimit = 4 * 1024 * 1024;

}  // namespace

Supervisor::Supervisor(SupervisorConfig config, SignalChannel* signals)
    : config_(std::move(config)), signals_(signals), buffer_(kReadChunk) {
  if (config_.timeout) {
    timeout_deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(*config_.timeout);
  }
  ranks_.reserve(static_cast<size_t>(std::max(config_.nprocs, 0)));
}

void Supervisor::AddRank(int rank, SpawnedProcess process) {
  std::string prefix = config_.tag_output ? RankPrefix(rank, config_.world_size) : std::string();
  Rank& r = ranks_.emplace_back();
  r.rank = rank;
  r.pid = process.pid;
  r.fds[kStdout] = std::move(process.out);
  r.fds[kStderr] = std::move(process.err);
  r.streams[kStdout] = std::make_unique<RankStream>(&stdout_sink_, config_.tag_output, prefix);
  r.streams[kStderr] = std::make_unique<RankStream>(&stderr_sink_, config_.tag_output, prefix);
  ++running_;
  // A rank started after the job was told to stop would otherwise miss the SIGTERM.
  if (terminating_) ::kill(-r.pid, killed_ ? SIGKILL : SIGTERM);
}

void Supervisor::Abort(int exit_code, const std::string& reason) {
  Say(reason);
  if (terminating_) return;
  exit_code_ = exit_code;
  BeginTermination();
}

int Supervisor::Run() {
  std::vector<pollfd> fds;
  std::vector<std::pair<Rank*, Stream>> owners;  // owners[i] belongs to fds[i + 1]
  while (!Done()) {
    fds.assign(1, pollfd{signals_->fd(), POLLIN, 0});
    owners.clear();
    for (Rank& rank : ranks_) {
      for (Stream s : {kStdout, kStderr}) {
        if (!rank.fds[s].valid()) continue;
        fds.push_back(pollfd{rank.fds[s].get(), POLLIN, 0});
        owners.emplace_back(&rank, s);
      }
    }
    int ready = ::poll(fds.data(), fds.size(), PollTimeoutMs());
    if (ready < 0 && errno != EINTR) throw std::system_error(errno, std::generic_category(), "poll");
    if (ready > 0) {
      // Output first, then exits: a rank's last lines then come out before the report of how it ended.
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents != 0) ReadOnce(*owners[i - 1].first, owners[i - 1].second);
      }
      if (fds[0].revents != 0) HandleSignals();
    }
    HandleDeadlines();
  }
  for (Rank& rank : ranks_) {
    Drain(rank);
    for (Stream s : {kStdout, kStderr}) {
      rank.streams[s]->Finish();
      rank.fds[s].Reset();
    }
  }
  return exit_code_;
}

bool Supervisor::Done() const {
  if (running_ > 0) return false;
  // After a clean finish, background processes a rank left behind are its own business. After a failure they are
  // part of the teardown: wait until they let go of the pipes, or until SIGKILL has been sent.
  if (!terminating_ || killed_) return true;
  for (const Rank& rank : ranks_) {
    if (AnyPipeOpen(rank)) return false;
  }
  return true;
}

bool Supervisor::AnyPipeOpen(const Rank& rank) const { return rank.fds[kStdout].valid() || rank.fds[kStderr].valid(); }

int Supervisor::PollTimeoutMs() const {
  std::optional<Clock::time_point> next;
  if (timeout_deadline_ && !timed_out_) next = *timeout_deadline_;
  if (terminating_ && !killed_ && (!next || kill_deadline_ < *next)) next = kill_deadline_;
  if (!next) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

ssize_t Supervisor::ReadOnce(Rank& rank, Stream stream) {
  UniqueFd& fd = rank.fds[stream];
  if (!fd.valid()) return 0;
  ssize_t n;
  do {
    n = ::read(fd.get(), buffer_.data(), buffer_.size());
  } while (n < 0 && errno == EINTR);
  if (n > 0) {
    rank.streams[stream]->Append(std::string_view(buffer_.data(), static_cast<size_t>(n)));
    return n;
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return -1;
  // EOF, or an error that will not go away: either way nothing more comes from this pipe.
  rank.streams[stream]->Finish();
  fd.Reset();
  return 0;
}

void Supervisor::Drain(Rank& rank) {
  for (Stream s : {kStdout, kStderr}) {
    size_t total = 0;
    ssize_t n;
    while (total < kDrainLimit && (n = ReadOnce(rank, s)) > 0) total += static_cast<size_t>(n);
  }
}

void Supervisor::HandleSignals() {
  for (int sig : signals_->ReadPending()) {
    if (sig == SIGCHLD) {
      ReapChildren();
    } else {
      SignalRanks(sig);  // SIGINT/SIGTERM/SIGHUP: the ranks decide what it means; we follow from their exits
    }
  }
}

void Supervisor::ReapChildren() {
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    for (Rank& rank : ranks_) {
      if (rank.pid != pid || !rank.running) continue;
      rank.running = false;
      --running_;
      // Everything the rank wrote before exiting is in its pipes now; print it before reporting the exit.
      Drain(rank);
      if (IsFailure(status) && !terminating_) {
        exit_code_ = ExitCodeFor(status);
        Say("rank " + std::to_string(rank.rank) + " (pid " + std::to_string(pid) + ") " + DescribeWaitStatus(status) +
            (running_ > 0 ? "; terminating the other ranks" : ""));
        BeginTermination();
      }
      break;
    }
  }
}

void Supervisor::HandleDeadlines() {
  Clock::time_point now = Clock::now();
  if (timeout_deadline_ && !timed_out_ && now >= *timeout_deadline_) {
    timed_out_ = true;
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%g", config_.timeout->count());
    Say(std::string("timed out after ") + seconds + " s; terminating all ranks");
    if (!terminating_) {
      exit_code_ = 124;
      BeginTermination();
    } else if (!killed_) {
      kill_deadline_ = now;  // already stopping: the timeout cuts the grace period short
    }
  }
  if (terminating_ && !killed_ && now >= kill_deadline_) {
    if (running_ > 0) {
      Say(std::to_string(running_) + " rank(s) still running " + std::to_string(config_.grace.count()) +
          " ms after SIGTERM; sending SIGKILL");
    }
    killed_ = true;
    SignalRanks(SIGKILL);
  }
}

void Supervisor::BeginTermination() {
  terminating_ = true;
  kill_deadline_ = Clock::now() + config_.grace;
  SignalRanks(SIGTERM);
}

void Supervisor::SignalRanks(int sig) {
  for (const Rank& rank : ranks_) {
    if (!rank.running && !AnyPipeOpen(rank)) continue;
    // The group reaches `sh -c` wrappers' children too. A rank whose group is gone but which has not been reaped
    // yet still gets the signal directly.
    if (::kill(-rank.pid, sig) != 0 && rank.running) ::kill(rank.pid, sig);
  }
}

void Supervisor::Say(const std::string& message) { stderr_sink_.Write("tern-run: " + message + "\n"); }

}  // namespace tern::run
