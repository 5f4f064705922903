// The launcher's event loop: forwards the ranks' output, reaps them, forwards signals, and tears the job down
// when a rank fails or the timeout passes. It sleeps in poll() on the ranks' pipes and a signalfd, so it costs no
// CPU while the ranks (who need the cores) run.
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "output_sink.hpp"
#include "rank_stream.hpp"
#include "signal_channel.hpp"
#include "spawn.hpp"
#include "unique_fd.hpp"

namespace tern::run {

struct SupervisorConfig {
  int world_size = 0;  // ranks in the whole job: sets the width of the [rank] tags
  int nprocs = 0;      // ranks this supervisor starts
  bool tag_output = true;
  std::chrono::milliseconds grace{3000};                 // between SIGTERM and SIGKILL when tearing down
  std::optional<std::chrono::duration<double>> timeout;  // whole-job limit, counted from construction
};

class Supervisor {
 public:
  Supervisor(SupervisorConfig config, SignalChannel* signals);
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Takes charge of a started rank: its output is forwarded and its exit watched from the next Run() on.
  void AddRank(int rank, SpawnedProcess process);

  // Ends the job early (e.g. a rank could not be started): prints reason, terminates the ranks already running and
  // makes Run() return exit_code.
  void Abort(int exit_code, const std::string& reason);

  // Returns once every rank has been reaped (and, after a failure, its process group has let go of the pipes or
  // been SIGKILLed). The result is tern-run's exit code: 0, the first failing rank's code, or 124 on timeout.
  int Run();

 private:
  using Clock = std::chrono::steady_clock;
  enum Stream { kStdout = 0, kStderr = 1 };

  struct Rank {
    int rank = 0;
    pid_t pid = -1;
    bool running = true;
    std::array<UniqueFd, 2> fds;  // indexed by Stream; invalid once at EOF
    std::array<std::unique_ptr<RankStream>, 2> streams;
  };

  bool Done() const;
  bool AnyPipeOpen(const Rank& rank) const;
  int PollTimeoutMs() const;
  // Reads one chunk; returns the bytes read, 0 at EOF (the pipe is then closed) or -1 if nothing was ready.
  ssize_t ReadOnce(Rank& rank, Stream stream);
  // Reads what is already in the rank's pipes, bounded so a chatty leftover grandchild cannot stall the loop.
  void Drain(Rank& rank);
  void HandleSignals();
  void ReapChildren();
  void HandleDeadlines();
  void BeginTermination();
  // Sends sig to the process group of every rank that is running or whose pipes someone still holds open.
  void SignalRanks(int sig);
  void Say(const std::string& message);

  SupervisorConfig config_;
  SignalChannel* signals_;
  OutputSink stdout_sink_{1};
  OutputSink stderr_sink_{2};
  std::vector<Rank> ranks_;
  int running_ = 0;
  int exit_code_ = 0;
  bool terminating_ = false;  // SIGTERM sent to the job; later rank failures are consequences, not news
  bool killed_ = false;       // SIGKILL sent
  bool timed_out_ = false;
  Clock::time_point kill_deadline_{};
  std::optional<Clock::time_point> timeout_deadline_;
  std::vector<char> buffer_;
};

}  // namespace tern::run
