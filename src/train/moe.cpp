// MoE dispatch/combine. Four exchanges per training step, all alltoallv of fp32 rows:
//   dispatch          tokens        source -> expert   (after an alltoall of per-expert row counts)
//   combine           outputs       expert -> source
//   combineBackward   d outputs     source -> expert
//   dispatchBackward  d inputs      expert -> source
// The counts exchanged in dispatch fix every later exchange's shape, so the backward needs no count exchange.
#include <algorithm>
#include <cstring>
#include <vector>

#include "common.hpp"
#include "moe_route.hpp"
#include "registered_floats.hpp"

namespace tern::train {
namespace {

using detail::fail;

}  // namespace

struct Moe::Impl {
  ternComm_t comm = nullptr;
  int rank = 0;
  int nranks = 1;
  int localExperts = 1;
  ternMoeConfig_t config{};
  size_t tokens = 0;
  bool dispatched = false;
  bool combined = false;
  bool backwardStarted = false;
  detail::SendPlan send;
  detail::RecvPlan recv;
  // Registered memory (registered_floats.hpp): peers read what the exchanges send straight out of it. What they
  // receive is too, so that every buffer starts on a page and the rows copied between them (the reorderings) sit at
  // the same offsets within a page: glibc's memcpy runs several times slower on some CPUs where the destination is
  // a few bytes past the source modulo the page, as it would be between a page-aligned buffer and malloc's.
  detail::RegisteredFloats sendRows;                                          // send layout staging (either width)
  detail::RegisteredFloats sourceMajor;                                       // receive layout staging (either width)
  detail::RegisteredFloats expertIn, expertOut, expertGradOut, expertGradIn;  // expert-major
  detail::RegisteredFloats returned;      // combine's results in send layout: d/dgate needs them
  detail::RegisteredFloats returnedGrad;  // dispatchBackward's input gradients in send layout
  ternMoeStats_t stats{};

  size_t outHidden() const { return config.outHidden; }

  // alltoallv of rows of width floats: sendCounts/recvCounts are rows per peer.
  void exchange(const float* sendBuf, const std::vector<size_t>& sendCounts, float* recvBuf,
                const std::vector<size_t>& recvCounts, size_t width, const char* what) {
    std::vector<size_t> sc(nranks), sd(nranks), rc(nranks), rd(nranks);
    size_t so = 0, ro = 0;
    for (int r = 0; r < nranks; ++r) {
      sc[r] = sendCounts[r] * width;
      sd[r] = so;
      so += sc[r];
      rc[r] = recvCounts[r] * width;
      rd[r] = ro;
      ro += rc[r];
    }
    // Empty buffers are fine to the core but must not be NULL when a count is non-zero; vectors may be empty.
    static float dummy = 0;
    detail::check(ternAlltoAllv(so ? sendBuf : &dummy, sc.data(), sd.data(), ro ? recvBuf : &dummy, rc.data(),
                                rd.data(), ternFloat32, comm),
                  comm, what);
  }

  // Expert-major rows -> source ranks; the result lands in send layout (row pos of each kept assignment).
  // With one local expert the two layouts are the same rows in the same order, so the exchange reads and writes the
  // expert-major buffers directly instead of going through a reordering copy.
  void toSources(const detail::RegisteredFloats& expertMajor, size_t width, detail::RegisteredFloats& out,
                 const char* what) {
    const float* rows = expertMajor.data();
    if (localExperts > 1) {
      sourceMajor.resizeForOverwrite(recv.total * width);
      recv.expertToSource(expertMajor.data(), sourceMajor.data(), width);
      rows = sourceMajor.data();
    }
    out.resizeForOverwrite(send.kept.size() * width);
    exchange(rows, recv.perSource, out.data(), send.perRank, width, what);
  }

  // Send-layout rows (sendRows) -> expert ranks, delivered expert-major into out.
  void toExperts(size_t width, detail::RegisteredFloats& out, const char* what) {
    out.resizeForOverwrite(recv.total * width);
    if (localExperts == 1) {
      exchange(sendRows.data(), send.perRank, out.data(), recv.perSource, width, what);
      return;
    }
    sourceMajor.resizeForOverwrite(recv.total * width);
    exchange(sendRows.data(), send.perRank, sourceMajor.data(), recv.perSource, width, what);
    recv.sourceToExpert(sourceMajor.data(), out.data(), width);
  }

  size_t checkExpert(int local, const char* what) const {
    if (!dispatched) fail(ternInvalidUsage, "%s before dispatch", what);
    if (local < 0 || local >= localExperts) {
      fail(ternInvalidArgument, "%s: local expert %d out of range (0..%d)", what, local, localExperts - 1);
    }
    return recv.expertOffset[local];
  }
};

Moe::Moe(ternComm_t comm, const ternMoeConfig_t& config) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  if (comm == nullptr) fail(ternInvalidArgument, "Moe: comm is NULL");
  s.comm = comm;
  detail::check(ternCommCount(comm, &s.nranks), comm, "Moe: ternCommCount");
  detail::check(ternCommUserRank(comm, &s.rank), comm, "Moe: ternCommUserRank");
  s.config = config;
  if (s.config.outHidden == 0) s.config.outHidden = s.config.hidden;
  if (config.numExperts <= 0 || config.numExperts % s.nranks != 0) {
    fail(ternInvalidArgument, "Moe: numExperts %d must be a positive multiple of the rank count %d", config.numExperts,
         s.nranks);
  }
  if (config.topK <= 0 || config.topK > config.numExperts) {
    fail(ternInvalidArgument, "Moe: topK %d must be in 1..numExperts", config.topK);
  }
  if (config.hidden == 0) fail(ternInvalidArgument, "Moe: hidden must be > 0");
  s.localExperts = config.numExperts / s.nranks;
}

Moe::~Moe() = default;

int Moe::localExperts() const { return impl_->localExperts; }
int Moe::firstExpert() const { return impl_->rank * impl_->localExperts; }

void Moe::dispatch(const float* tokens, size_t numTokens, const int* expertIds, const float* gateWeights) {
  Impl& s = *impl_;
  const size_t k = s.config.topK, h = s.config.hidden;
  if (numTokens > 0 && (tokens == nullptr || expertIds == nullptr || gateWeights == nullptr)) {
    fail(ternInvalidArgument, "Moe::dispatch: NULL input");
  }
  for (size_t i = 0; i < numTokens * k; ++i) {
    if (expertIds[i] >= s.config.numExperts) {
      fail(ternInvalidArgument, "Moe::dispatch: token %zu has expert id %d (of %d experts)", i / k, expertIds[i],
           s.config.numExperts);
    }
  }
  s.tokens = numTokens;
  s.send = detail::planSend(expertIds, gateWeights, numTokens, s.config.topK, s.config.numExperts, s.nranks,
                            s.config.capacityFactor);

  // Counts first: each rank learns how many rows each of its experts gets from every source.
  std::vector<uint64_t> sendCounts(s.send.perExpert.begin(), s.send.perExpert.end());
  std::vector<uint64_t> recvCounts(s.config.numExperts);
  detail::check(ternAlltoAll(sendCounts.data(), recvCounts.data(), s.localExperts, ternUint64, s.comm), s.comm,
                "Moe::dispatch: ternAlltoAll of counts");
  s.recv = detail::planRecv(recvCounts, s.nranks, s.localExperts);

  s.sendRows.resizeForOverwrite(s.send.kept.size() * h);
  for (const auto& a : s.send.kept) std::memcpy(&s.sendRows[a.pos * h], tokens + a.token * h, h * sizeof(float));
  s.toExperts(h, s.expertIn, "Moe::dispatch: ternAlltoAllv of tokens");
  s.expertOut.assignZeros(s.recv.total * s.outHidden());

  s.dispatched = true;
  s.combined = false;
  s.backwardStarted = false;
  s.stats.tokens = numTokens;
  s.stats.assignments = s.send.assignments;
  s.stats.dropped = s.send.dropped;
  s.stats.capacity = s.send.capacity == SIZE_MAX ? 0 : s.send.capacity;
  s.stats.received = s.recv.total;
  s.stats.totalAssignments += s.send.assignments;
  s.stats.totalDropped += s.send.dropped;
}

size_t Moe::expertTokens(int localExpert) const {
  impl_->checkExpert(localExpert, "Moe::expertTokens");
  return impl_->recv.perExpert[localExpert];
}

const float* Moe::expertInput(int localExpert) const {
  size_t row = impl_->checkExpert(localExpert, "Moe::expertInput");
  return impl_->expertIn.data() + row * impl_->config.hidden;
}

float* Moe::expertOutput(int localExpert) {
  size_t row = impl_->checkExpert(localExpert, "Moe::expertOutput");
  return impl_->expertOut.data() + row * impl_->outHidden();
}

void Moe::combine(float* out) {
  Impl& s = *impl_;
  if (!s.dispatched) fail(ternInvalidUsage, "Moe::combine before dispatch");
  const size_t w = s.outHidden();
  if (s.tokens > 0 && out == nullptr) fail(ternInvalidArgument, "Moe::combine: out is NULL");
  s.toSources(s.expertOut, w, s.returned, "Moe::combine: ternAlltoAllv of expert outputs");
  if (s.tokens > 0) std::fill(out, out + s.tokens * w, 0.0f);
  for (const auto& a : s.send.kept) {
    const float* r = &s.returned[a.pos * w];
    float* o = out + a.token * w;
    for (size_t i = 0; i < w; ++i) o[i] += a.gate * r[i];
  }
  s.combined = true;
}

void Moe::combineBackward(const float* gradOut, float* gradGates) {
  Impl& s = *impl_;
  if (!s.combined) fail(ternInvalidUsage, "Moe::combineBackward before combine");
  const size_t w = s.outHidden(), k = s.config.topK;
  if (s.tokens > 0 && gradOut == nullptr) fail(ternInvalidArgument, "Moe::combineBackward: gradOut is NULL");
  if (gradGates != nullptr) std::fill(gradGates, gradGates + s.tokens * k, 0.0f);
  s.sendRows.resizeForOverwrite(s.send.kept.size() * w);
  for (const auto& a : s.send.kept) {
    const float* g = gradOut + a.token * w;
    const float* r = &s.returned[a.pos * w];
    float* dst = &s.sendRows[a.pos * w];
    float dot = 0;
    for (size_t i = 0; i < w; ++i) {
      dst[i] = a.gate * g[i];
      dot += g[i] * r[i];
    }
    if (gradGates != nullptr) gradGates[a.token * k + a.k] = dot;
  }
  s.toExperts(w, s.expertGradOut, "Moe::combineBackward: ternAlltoAllv of output gradients");
  s.expertGradIn.assignZeros(s.recv.total * s.config.hidden);
  s.backwardStarted = true;
}

const float* Moe::expertGradOutput(int localExpert) const {
  size_t row = impl_->checkExpert(localExpert, "Moe::expertGradOutput");
  if (!impl_->backwardStarted) fail(ternInvalidUsage, "Moe::expertGradOutput before combineBackward");
  return impl_->expertGradOut.data() + row * impl_->outHidden();
}

float* Moe::expertGradInput(int localExpert) {
  size_t row = impl_->checkExpert(localExpert, "Moe::expertGradInput");
  if (!impl_->backwardStarted) fail(ternInvalidUsage, "Moe::expertGradInput before combineBackward");
  return impl_->expertGradIn.data() + row * impl_->config.hidden;
}

void Moe::dispatchBackward(float* gradTokens) {
  Impl& s = *impl_;
  if (!s.backwardStarted) fail(ternInvalidUsage, "Moe::dispatchBackward before combineBackward");
  const size_t h = s.config.hidden;
  if (s.tokens > 0 && gradTokens == nullptr) fail(ternInvalidArgument, "Moe::dispatchBackward: gradTokens is NULL");
  detail::RegisteredFloats& back = s.returnedGrad;
  s.toSources(s.expertGradIn, h, back, "Moe::dispatchBackward: ternAlltoAllv of input gradients");
  if (s.tokens > 0) std::fill(gradTokens, gradTokens + s.tokens * h, 0.0f);
  for (const auto& a : s.send.kept) {
    const float* r = &back[a.pos * h];
    float* g = gradTokens + a.token * h;
    for (size_t i = 0; i < h; ++i) g[i] += r[i];
  }
}

ternMoeStats_t Moe::stats() const { return impl_->stats; }

}  // namespace tern::train
