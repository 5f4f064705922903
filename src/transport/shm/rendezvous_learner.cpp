#include "transport/shm/rendezvous_learner.hpp"

#include <bit>

#include "base/error.hpp"
#include "transport/shm/shm_layout.hpp"

namespace tern::shm {

namespace {

constexpr int kFirstBandLog2 = std::countr_zero(kRendezvousMinBytes);

void pushNewest(double (&samples)[2], int& count, double value) {
  samples[1] = samples[0];
  samples[0] = value;
  if (count < 2) ++count;
}

}  // namespace

RendezvousLearner::RendezvousLearner(bool enabled, bool priorRendezvous) : enabled_(enabled) {
  for (int i = 0; i < kBands; ++i) bands_[i].rendezvous = priorFor(priorRendezvous, i);
}

bool RendezvousLearner::priorFor(bool priorRendezvous, int band) {
  return priorRendezvous && (kRendezvousMinBytes << band) >= kRingSlotBytes;
}

int RendezvousLearner::bandOf(size_t bytes) {
  const int log2 = static_cast<int>(std::bit_width(bytes)) - 1;
  if (log2 <= kFirstBandLog2) return 0;
  return log2 - kFirstBandLog2 < kBands ? log2 - kFirstBandLog2 : kBands - 1;
}

bool RendezvousLearner::wantsRendezvous(uint64_t published, size_t bytes, bool priorRendezvous) {
  const int b = bandOf(bytes);
  if ((published >> b & 1u) == 0) return priorFor(priorRendezvous, b);
  return (published >> (kBands + b) & 1u) != 0;
}

std::string RendezvousLearner::takeDecision() {
  std::string out;
  out.swap(decision_);
  return out;
}

void RendezvousLearner::publish(int index, const Band& band) {
  const bool asked = band.checking ? !band.rendezvous : band.rendezvous;
  published_ |= uint64_t{1} << index;
  const uint64_t formBit = uint64_t{1} << (kBands + index);
  published_ = asked ? (published_ | formBit) : (published_ & ~formBit);
}

void RendezvousLearner::startCheck(Band& band, int64_t nowNs) {
  band.checking = true;
  band.skip = 1;
  band.checkMessages = 0;
  band.otherCount = 0;
  band.nextCheck = band.messages + kRecheckMessages;
  band.nextCheckNs = nowNs + kRecheckNs;
}

void RendezvousLearner::decide(int index, Band& band) {
  band.checking = false;
  const bool otherFaster = band.other[0] + band.other[1] < band.current[0] + band.current[1];
  const double usPerMiB = 1e6 * static_cast<double>(size_t{1} << 20) / 2;
  const double rendezvousUs = (band.rendezvous ? band.current[0] + band.current[1] : band.other[0] + band.other[1]);
  const double stagedUs = (band.rendezvous ? band.other[0] + band.other[1] : band.current[0] + band.current[1]);
  decision_ = format("long messages of %zu+ bytes: %s (%.1f us/MiB by rendezvous, %.1f staged; at message %llu)",
                     kRendezvousMinBytes << index, band.rendezvous != otherFaster ? "rendezvous" : "staged",
                     rendezvousUs * usPerMiB, stagedUs * usPerMiB, static_cast<unsigned long long>(band.messages));
  if (otherFaster) {
    band.rendezvous = !band.rendezvous;
    band.current[0] = band.other[0];
    band.current[1] = band.other[1];
    band.currentCount = 2;
    band.skip = 0;
  } else {
    band.skip = 1;  // the first message back in the kept form pays the switch
  }
}

bool RendezvousLearner::record(size_t bytes, bool rendezvous, double seconds, int64_t nowNs) {
  if (!enabled_ || bytes < kRendezvousMinBytes) return false;
  const int index = bandOf(bytes);
  Band& band = bands_[index];
  ++band.messages;
  const double perByte = seconds / static_cast<double>(bytes);
  const uint64_t before = published_;
  if (!band.checking) {
    if (rendezvous != band.rendezvous) return false;  // started before the sender saw the end of a check
    if (band.skip > 0) {
      --band.skip;
    } else {
      pushNewest(band.current, band.currentCount, perByte);
    }
    if (band.currentCount == 2 && band.messages >= band.nextCheck && nowNs >= band.nextCheckNs) startCheck(band, nowNs);
  } else if (rendezvous == band.rendezvous) {
    if (++band.checkMessages > kAbandonAfter) {  // the sender does not take the other form
      band.checking = false;
      band.skip = 0;
    }
  } else {
    ++band.checkMessages;
    if (band.skip > 0) {
      --band.skip;
    } else {
      pushNewest(band.other, band.otherCount, perByte);
      if (band.otherCount == 2) decide(index, band);
    }
  }
  publish(index, band);
  return published_ != before;
}

}  // namespace tern::shm
