// Whether long point-to-point messages from one peer of this host should come by rendezvous (this rank copies them
// out of the sender's buffer with one kernel copy) or staged through the ring (the sender's copy in, this rank's copy
// out), learned by the receiver from the messages' own times and published to the sender.
//
// Why: which form is faster is not a constant of the host. Where the two ranks' CPUs share a cache, staging's two
// copies are cheap and beat a kernel copy that pins the sender's pages one by one; where they do not (a VM whose
// host moves its vCPUs between core complexes while the job runs), every staged line crosses between the CPUs twice
// and one kernel copy is several times faster. The sender chooses a message's form but sees only its own side of the
// cost (an eager staged send completes before the receiver has read a byte); the receiver sees the whole transfer:
// from the later of the message's start (the sender stamps it in the first slot) and its own receive being posted,
// to the last byte copied out.
//
// How, per size band of the peer's messages (a power of two of message bytes):
//   - The band starts in the host's prior form (staged where the setup probe found kernel copies slow, rendezvous
//     otherwise; staged on every host below a ring slot, kRendezvousMinBytes), which the sender uses until this rank
//     publishes a form for the band.
//   - A check asks the sender for the other form: the first message that arrives in it pays the switch (the waits'
//     spin budget and the caches adapt to the form before) and is not counted, the next two are, and their time per
//     byte against the two counted messages of the current form before the check decides which form the band keeps.
//     The first check runs as soon as the band has two counted messages (a short run pays three messages of the
//     other form once, in its warm-up), the next ones once kRecheckNs have passed and kRecheckMessages messages
//     of the band have arrived since the last: the verdict follows the placement while the job runs (the host
//     moves vCPUs on a scale of seconds), and the checks cost at most three messages per kRecheckNs however fast
//     the messages come. Counting messages instead would make a benchmark's few hundred messages per size pay
//     several checks, each three messages of a form that can be several times slower.
//   - Messages not in the requested form (the sender started them before it saw the request) are not counted, and a
//     check that sees none of the asked form within kAbandonAfter messages ends without a verdict.
// Only this rank writes the published word and only the sender reads it; nothing needs agreeing between ranks,
// because the receiver takes either form whichever the sender chose.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace tern::shm {

class RendezvousLearner {
 public:
  static constexpr int kBands = 32;  // kRendezvousMinBytes and up, one band per power of two
  static constexpr int64_t kRecheckNs = 200'000'000;
  static constexpr uint64_t kRecheckMessages = 16;
  static constexpr int kAbandonAfter = 64;

  // enabled = false: nothing is learned and the published word stays 0 (the sender keeps the prior).
  // priorRendezvous: the form the sender uses for a band with nothing published (the same on both sides), from a
  // ring slot's size; smaller bands start staged (priorFor).
  RendezvousLearner(bool enabled, bool priorRendezvous);

  // After a message of `bytes` (at least the rendezvous size) from the peer completed at nowNs (steady clock): whether
  // it came by rendezvous and the seconds it took as seen by this rank. Returns true when the published word changed.
  bool record(size_t bytes, bool rendezvous, double seconds, int64_t nowNs);
  // What the sender reads: bit b set when this rank has a form for band b, bit 32 + b set when that form is
  // rendezvous.
  uint64_t published() const { return published_; }
  // The sender's side: the form for a message of `bytes` given the receiver's published word and the prior.
  static bool wantsRendezvous(uint64_t published, size_t bytes, bool priorRendezvous);
  // A band's form before anything is published: the host's prior, from a ring slot's size (kRendezvousMinBytes).
  static bool priorFor(bool priorRendezvous, int band);
  static int bandOf(size_t bytes);
  // What the last check decided, for the log ("" when no check ended since the last call); clears it.
  std::string takeDecision();

 private:
  struct Band {
    uint64_t messages = 0;       // of this band received, any form
    uint64_t nextCheck = 0;      // the message count from which the next check may start (once two are counted)
    int64_t nextCheckNs = 0;     // and the time
    bool rendezvous = false;     // the band's form
    bool checking = false;       // the other form is asked for
    int skip = 1;                // messages of the expected form still to leave uncounted (the cold one, a switch)
    int checkMessages = 0;       // messages since the check began
    double current[2] = {0, 0};  // seconds per byte of the form's last two counted messages, newest first
    int currentCount = 0;
    double other[2] = {0, 0};  // the check's counted messages
    int otherCount = 0;
  };
  void startCheck(Band& band, int64_t nowNs);
  void decide(int index, Band& band);
  void publish(int index, const Band& band);

  bool enabled_;
  std::array<Band, kBands> bands_{};
  uint64_t published_ = 0;
  std::string decision_;
};

}  // namespace tern::shm
