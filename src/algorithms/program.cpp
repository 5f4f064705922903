#include "algorithms/program.hpp"

#include <algorithm>

#include "base/dtype.hpp"
#include "base/error.hpp"

namespace tern::algo {

namespace {
constexpr size_t kScratchAlign = 64;
}  // namespace

Program::Program(std::string algorithm, const CollArgs& args, int rank, int nranks)
    : args_(args), rank_(rank), nranks_(nranks), esize_(dataTypeSize(args.dtype)) {
  schedule_.algorithm = std::move(algorithm);
  if (esize_ == 0 && args.coll != Collective::kBarrier) {
    throwError(ternInvalidArgument, "%s: invalid datatype %d", schedule_.algorithm.c_str(),
               static_cast<int>(args.dtype));
  }
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    throwError(ternInvalidArgument, "%s: rank %d out of range for %d ranks", schedule_.algorithm.c_str(), rank, nranks);
  }
  if (!args.inPlace) return;
  switch (args.coll) {
    case Collective::kAllReduce:
    case Collective::kBroadcast:
    case Collective::kReduce:
    case Collective::kAlltoAll:
    case Collective::kAlltoAllv:
      inputAliasesOutput_ = true;
      break;
    case Collective::kAllGather:
      inputAliasesOutput_ = true;
      inputBase_ = static_cast<size_t>(rank) * args.count * esize_;
      break;
    case Collective::kReduceScatter:
      outputAliasesInput_ = true;
      outputBase_ = static_cast<size_t>(rank) * args.count * esize_;
      break;
    default:
      break;
  }
}

Span Program::inputAt(size_t elemOffset, size_t elemCount) const {
  return {BufferId::kInput, elemOffset * esize_, elemCount * esize_};
}
Span Program::outputAt(size_t elemOffset, size_t elemCount) const {
  return {BufferId::kOutput, elemOffset * esize_, elemCount * esize_};
}
Span Program::scratchAt(size_t byteOffset, size_t elemCount) const {
  return {BufferId::kScratch, byteOffset, elemCount * esize_};
}

Locator Program::inputLocator(size_t baseElems) const {
  const size_t e = esize_;
  return [e, baseElems](size_t off, size_t cnt) { return Span{BufferId::kInput, (off - baseElems) * e, cnt * e}; };
}
Locator Program::outputLocator(size_t baseElems) const {
  const size_t e = esize_;
  return [e, baseElems](size_t off, size_t cnt) { return Span{BufferId::kOutput, (off - baseElems) * e, cnt * e}; };
}
Locator Program::scratchLocator(size_t byteOffset, size_t baseElems) const {
  const size_t e = esize_;
  return [e, byteOffset, baseElems](size_t off, size_t cnt) {
    return Span{BufferId::kScratch, byteOffset + (off - baseElems) * e, cnt * e};
  };
}

Program::Access Program::canonical(const Span& s, bool write) const {
  switch (s.buffer) {
    case BufferId::kInput:
      if (inputAliasesOutput_) return {1, inputBase_ + s.offset, s.bytes, write};
      return {0, s.offset, s.bytes, write};
    case BufferId::kOutput:
      if (outputAliasesInput_) return {0, outputBase_ + s.offset, s.bytes, write};
      return {1, s.offset, s.bytes, write};
    case BufferId::kScratch:
      return {2, s.offset, s.bytes, write};
  }
  return {2, s.offset, s.bytes, write};
}

uint32_t Program::send(int peer, const Span& src, const std::vector<uint32_t>& after) {
  std::vector<Access> acc;
  if (src.bytes > 0) acc.push_back(canonical(src, false));
  return add({StepKind::kSend, peer, {}, src, {}, {}}, acc, after);
}

uint32_t Program::recv(int peer, const Span& dst, const std::vector<uint32_t>& after) {
  std::vector<Access> acc;
  if (dst.bytes > 0) acc.push_back(canonical(dst, true));
  return add({StepKind::kRecv, peer, dst, {}, {}, {}}, acc, after);
}

uint32_t Program::reduce(const Span& dst, const Span& a, const Span& b) {
  if (dst.bytes == 0) return kNone;
  return add({StepKind::kReduce, -1, dst, a, b, {}}, {canonical(a, false), canonical(b, false), canonical(dst, true)},
             {});
}

uint32_t Program::copy(const Span& dst, const Span& src) {
  if (dst.bytes == 0) return kNone;
  Access d = canonical(dst, true);
  Access s = canonical(src, false);
  if (d.mem == s.mem && d.off == s.off) return kNone;  // same memory: the executor would skip it anyway
  return add({StepKind::kCopy, -1, dst, src, {}, {}}, {s, d}, {});
}

uint32_t Program::finalizeAvg(const Span& dst) {
  if (args_.op != ternAvg || nranks_ == 1 || dst.bytes == 0) return kNone;
  return add({StepKind::kFinalize, -1, dst, {}, {}, {}}, {canonical(dst, true)}, {});
}

size_t Program::allocScratch(size_t bytes) {
  const size_t off = scratchTop_;
  scratchTop_ += (bytes + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
  schedule_.scratchBytes = std::max(schedule_.scratchBytes, scratchTop_);
  return off;
}

Schedule Program::take() { return std::move(schedule_); }

uint32_t Program::add(Step step, const std::vector<Access>& accesses, const std::vector<uint32_t>& after) {
  const uint32_t index = static_cast<uint32_t>(schedule_.steps.size());
  std::vector<uint32_t>& deps = step.deps;
  for (uint32_t d : after) {
    if (d != kNone) deps.push_back(d);
  }
  for (const Access& a : accesses) {
    if (a.len > 0) trackers_[a.mem].collect(a.off, a.len, a.write, deps);
  }
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  // Reads first, then writes: a step that reads and writes the same bytes (reduce in place) ends up as their writer.
  for (const Access& a : accesses) {
    if (a.len > 0 && !a.write) trackers_[a.mem].apply(a.off, a.len, false, index);
  }
  for (const Access& a : accesses) {
    if (a.len > 0 && a.write) trackers_[a.mem].apply(a.off, a.len, true, index);
  }
  schedule_.steps.push_back(std::move(step));
  return index;
}

void Program::Tracker::collect(size_t off, size_t len, bool write, std::vector<uint32_t>& deps) const {
  auto it = segs_.upper_bound(off);
  --it;  // segs_ always holds key 0
  const size_t end = off + len;
  for (; it != segs_.end() && it->first < end; ++it) {
    const Segment& s = it->second;
    if (s.writer != kNone) deps.push_back(s.writer);
    if (write) deps.insert(deps.end(), s.readers.begin(), s.readers.end());
  }
}

std::map<size_t, Program::Segment>::iterator Program::Tracker::split(size_t pos) {
  auto it = segs_.upper_bound(pos);
  --it;
  if (it->first == pos) return it;
  return segs_.emplace_hint(std::next(it), pos, it->second);
}

void Program::Tracker::apply(size_t off, size_t len, bool write, uint32_t step) {
  auto first = split(off);
  auto last = split(off + len);
  for (auto it = first; it != last; ++it) {
    Segment& s = it->second;
    if (write) {
      s.writer = step;
      s.readers.clear();
    } else if (s.readers.empty() || s.readers.back() != step) {
      s.readers.push_back(step);
    }
  }
  // Merge neighbours that ended up identical, so long runs of chunked steps do not fragment the map.
  auto merge = [this](std::map<size_t, Segment>::iterator it) {
    if (it == segs_.begin() || it == segs_.end()) return;
    auto prev = std::prev(it);
    if (prev->second.writer == it->second.writer && prev->second.readers == it->second.readers) segs_.erase(it);
  };
  merge(last);
  merge(segs_.find(off));
}

SlotPool::SlotPool(Program& program, size_t slotBytes, size_t minSlots)
    : program_(program), slotBytes_(slotBytes), minSlots_(std::max<size_t>(1, minSlots)) {}

size_t SlotPool::acquire() {
  if (created_ < minSlots_ || free_.empty()) {
    ++created_;
    return program_.allocScratch(slotBytes_);
  }
  size_t off = free_.front();
  free_.pop_front();
  return off;
}

void SlotPool::release(size_t offset) { free_.push_back(offset); }

}  // namespace tern::algo
