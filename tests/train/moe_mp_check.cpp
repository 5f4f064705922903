// One rank of a multi-process MoE step (started by tern-run): identity experts give every token back exactly,
// forward and backward, and where the ranks share a host their exchanges move each block once, straight out of the
// sender's rows (the layer keeps them in ternMemAlloc memory, which peers map: the shm_mapped form). The ranks are
// processes, not threads, since threads of one process read each other's memory whatever it is.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tern/tern_ext.h"
#include "tern/train.h"

namespace {

int failures = 0;

void expect(bool ok, int rank, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what);
  ++failures;
}

void must(ternResult_t r, const char* what) {
  if (r == ternSuccess) return;
  std::fprintf(stderr, "%s: %s (%s)\n", what, ternGetErrorString(r), ternTrainGetLastError());
  std::exit(2);
}

std::string lastAlgorithm(ternComm_t comm) {
  char name[64] = {};
  must(ternCommLastAlgorithm(comm, name, sizeof(name)), "ternCommLastAlgorithm");
  return name;
}

// Each of the rank's two local experts: its rows of `in` times scale into `out` (an expert that scales its input).
using ExpertInput = ternResult_t (*)(ternMoe_t, int, const float**);
using ExpertOutput = ternResult_t (*)(ternMoe_t, int, float**);
void runExperts(ternMoe_t moe, ExpertInput input, ExpertOutput output, size_t hidden, float scale) {
  for (int e = 0; e < 2; ++e) {
    size_t count = 0;
    const float* in = nullptr;
    float* out = nullptr;
    must(ternMoeExpertTokens(moe, e, &count), "ternMoeExpertTokens");
    must(input(moe, e, &in), "an expert's input");
    must(output(moe, e, &out), "an expert's output");
    for (size_t i = 0; i < count * hidden; ++i) out[i] = scale * in[i];
  }
}

}  // namespace

int main() {
  ternComm_t comm = nullptr;
  must(ternCommInitFromEnv(&comm, nullptr), "ternCommInitFromEnv");
  int rank = 0, nranks = 1;
  must(ternCommUserRank(comm, &rank), "ternCommUserRank");
  must(ternCommCount(comm, &nranks), "ternCommCount");
  // Blocks of tens of KB per peer: past the sizes that go inline through the staging slots.
  constexpr size_t kHidden = 64, kTokens = 300;
  ternMoeConfig_t config;
  ternMoeConfigDefault(&config);
  config.numExperts = 2 * nranks;
  config.topK = 2;
  config.capacityFactor = 0;  // no drops: every token comes back whole
  config.hidden = kHidden;
  ternMoe_t moe = nullptr;
  must(ternMoeCreate(comm, &config, &moe), "ternMoeCreate");
  const bool sharedMemory = std::getenv("TERN_SHM_DISABLE") == nullptr && nranks > 1;

  std::vector<float> tokens(kTokens * kHidden), out(kTokens * kHidden), grad(kTokens * kHidden);
  std::vector<int> ids(kTokens * 2);
  const std::vector<float> gates(kTokens * 2, 0.5f);  // 0.5 x + 0.5 x is x exactly
  for (int step = 0; step < 3; ++step) {
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = static_cast<float>((rank + 1) * 1000 + step) + 0.25f * static_cast<float>(i);
    for (size_t t = 0; t < kTokens; ++t) {  // two distinct experts, spread unevenly over the ranks
      ids[2 * t] = static_cast<int>((t * 7 + rank + step) % config.numExperts);
      ids[2 * t + 1] = (ids[2 * t] + 1 + static_cast<int>(t % 3)) % config.numExperts;
    }
    must(ternMoeDispatch(moe, tokens.data(), kTokens, ids.data(), gates.data()), "ternMoeDispatch");
    if (sharedMemory)
      expect(lastAlgorithm(comm) == "shm_mapped", rank, ("dispatch ran " + lastAlgorithm(comm)).c_str());
    runExperts(moe, ternMoeExpertInput, ternMoeExpertOutput, kHidden, 1.0f);  // identity experts
    must(ternMoeCombine(moe, out.data()), "ternMoeCombine");
    if (sharedMemory) expect(lastAlgorithm(comm) == "shm_mapped", rank, ("combine ran " + lastAlgorithm(comm)).c_str());
    expect(std::memcmp(out.data(), tokens.data(), tokens.size() * sizeof(float)) == 0, rank,
           "combine did not give every token back");

    must(ternMoeCombineBackward(moe, tokens.data(), nullptr), "ternMoeCombineBackward");
    // The gradient arrives scaled by its gate (0.5); doubled, the two halves sum back to the token exactly.
    runExperts(moe, ternMoeExpertGradOutput, ternMoeExpertGradInput, kHidden, 2.0f);
    must(ternMoeDispatchBackward(moe, grad.data()), "ternMoeDispatchBackward");
    if (sharedMemory) {
      expect(lastAlgorithm(comm) == "shm_mapped", rank, ("dispatch backward ran " + lastAlgorithm(comm)).c_str());
    }
    for (size_t i = 0; i < grad.size(); ++i) grad[i] *= 0.5f;  // sum over k of 2 * 0.5 * token = 2 * token
    expect(std::memcmp(grad.data(), tokens.data(), tokens.size() * sizeof(float)) == 0, rank,
           "dispatch backward did not give every token's gradient back");
  }
  must(ternMoeDestroy(moe), "ternMoeDestroy");
  must(ternCommDestroy(comm), "ternCommDestroy");
  if (failures == 0) std::printf("rank %d: MoE step over %d processes OK\n", rank, nranks);
  return failures == 0 ? 0 : 1;
}
