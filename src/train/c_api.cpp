// C entry points: thin wrappers that turn the C++ classes' exceptions into ternResult_t plus a per-thread message
// (ternTrainGetLastError), the same contract as the core API.
#include <new>
#include <string>

#include "common.hpp"

// The opaque C handles are the C++ objects themselves.
struct ternOptimizer : tern::train::Optimizer {
  using Optimizer::Optimizer;
};
struct ternDdp : tern::train::Ddp {
  using Ddp::Ddp;
};
struct ternZero : tern::train::Zero {
  using Zero::Zero;
};
struct ternMoe : tern::train::Moe {
  using Moe::Moe;
};

namespace {

thread_local std::string lastError;

template <typename F>
ternResult_t guarded(F&& f) {
  try {
    f();
    return ternSuccess;
  } catch (const tern::train::Error& e) {
    lastError = e.what();
    return e.result();
  } catch (const std::bad_alloc&) {
    lastError = "out of memory";
    return ternSystemError;
  } catch (const std::exception& e) {
    lastError = e.what();
    return ternInternalError;
  }
}

template <typename T>
T& deref(T* handle, const char* what) {
  if (handle == nullptr) tern::train::detail::fail(ternInvalidArgument, "%s: handle is NULL", what);
  return *handle;
}

void requireOut(const void* p, const char* what) {
  if (p == nullptr) tern::train::detail::fail(ternInvalidArgument, "%s: output pointer is NULL", what);
}

}  // namespace

extern "C" {

const char* ternTrainGetLastError(void) { return lastError.c_str(); }

void ternOptimizerConfigDefault(ternOptimizerConfig_t* c, ternOptimizerKind_t kind) {
  if (c == nullptr) return;
  *c = ternOptimizerConfig_t{kind, 0.01f, 0.9f, 0.9f, 0.999f, 1e-8f, 0.0f};
  if (kind != ternOptSgd) c->lr = 1e-3f;
}

void ternDdpConfigDefault(ternDdpConfig_t* c) {
  if (c == nullptr) return;
  *c = ternDdpConfig_t{0, 0, nullptr, ternFloat32, 1, 1, 1};
}

void ternZeroConfigDefault(ternZeroConfig_t* c) {
  if (c == nullptr) return;
  c->stage = 1;
  ternOptimizerConfigDefault(&c->optimizer, ternOptSgd);
  c->paramDtype = ternFloat32;
  c->bucketBytes = 0;
  c->overlap = 1;
  c->prefetch = 1;
}

void ternMoeConfigDefault(ternMoeConfig_t* c) {
  if (c == nullptr) return;
  *c = ternMoeConfig_t{0, 1, 1.25f, 0, 0};
}

ternResult_t ternOptimizerCreate(const ternOptimizerConfig_t* config, size_t count, ternOptimizer_t* optimizer) {
  return guarded([&] {
    requireOut(optimizer, "ternOptimizerCreate");
    *optimizer = new ternOptimizer(deref(config, "ternOptimizerCreate config"), count);
  });
}
ternResult_t ternOptimizerStep(ternOptimizer_t o, float* params, const float* grads) {
  return guarded([&] {
    auto& opt = deref(o, "ternOptimizerStep");
    if (opt.count() > 0 && (params == nullptr || grads == nullptr)) {
      tern::train::detail::fail(ternInvalidArgument, "ternOptimizerStep: NULL buffer");
    }
    opt.step(params, grads);
  });
}
ternResult_t ternOptimizerSetLr(ternOptimizer_t o, float lr) {
  return guarded([&] { deref(o, "ternOptimizerSetLr").setLr(lr); });
}
ternResult_t ternOptimizerDestroy(ternOptimizer_t o) {
  return guarded([&] { delete o; });
}

ternResult_t ternDdpCreate(ternComm_t comm, const ternDdpConfig_t* config, ternDdp_t* ddp) {
  return guarded([&] {
    requireOut(ddp, "ternDdpCreate");
    *ddp = new ternDdp(comm, config);
  });
}
ternResult_t ternDdpAddParameter(ternDdp_t ddp, void* data, void* grad, size_t count, ternDataType_t dtype,
                                 int* index) {
  return guarded([&] {
    int i = deref(ddp, "ternDdpAddParameter").addParameter(data, grad, count, dtype);
    if (index != nullptr) *index = i;
  });
}
ternResult_t ternDdpFinalize(ternDdp_t ddp) {
  return guarded([&] { deref(ddp, "ternDdpFinalize").finalize(); });
}
ternResult_t ternDdpGradReady(ternDdp_t ddp, int index) {
  return guarded([&] { deref(ddp, "ternDdpGradReady").gradReady(index); });
}
ternResult_t ternDdpFinish(ternDdp_t ddp, int* synced) {
  return guarded([&] {
    bool s = deref(ddp, "ternDdpFinish").finish();
    if (synced != nullptr) *synced = s ? 1 : 0;
  });
}
ternResult_t ternDdpGetStats(ternDdp_t ddp, ternDdpStats_t* stats) {
  return guarded([&] {
    requireOut(stats, "ternDdpGetStats");
    *stats = deref(ddp, "ternDdpGetStats").stats();
  });
}
ternResult_t ternDdpDestroy(ternDdp_t ddp) {
  return guarded([&] { delete ddp; });
}

ternResult_t ternZeroCreate(ternComm_t comm, const ternZeroConfig_t* config, ternZero_t* zero) {
  return guarded([&] {
    requireOut(zero, "ternZeroCreate");
    *zero = new ternZero(comm, config);
  });
}
ternResult_t ternZeroAddParameter(ternZero_t zero, int layer, size_t count, const void* init, int* index) {
  return guarded([&] {
    int i = deref(zero, "ternZeroAddParameter").addParameter(layer, count, init);
    if (index != nullptr) *index = i;
  });
}
ternResult_t ternZeroFinalize(ternZero_t zero) {
  return guarded([&] { deref(zero, "ternZeroFinalize").finalize(); });
}
ternResult_t ternZeroGather(ternZero_t zero, int layer) {
  return guarded([&] { deref(zero, "ternZeroGather").gather(layer); });
}
ternResult_t ternZeroRelease(ternZero_t zero, int layer) {
  return guarded([&] { deref(zero, "ternZeroRelease").release(layer); });
}
ternResult_t ternZeroParam(ternZero_t zero, int index, void** data) {
  return guarded([&] {
    requireOut(data, "ternZeroParam");
    *data = deref(zero, "ternZeroParam").param(index);
  });
}
ternResult_t ternZeroGrad(ternZero_t zero, int index, void** grad) {
  return guarded([&] {
    requireOut(grad, "ternZeroGrad");
    *grad = deref(zero, "ternZeroGrad").grad(index);
  });
}
ternResult_t ternZeroGradReady(ternZero_t zero, int index) {
  return guarded([&] { deref(zero, "ternZeroGradReady").gradReady(index); });
}
ternResult_t ternZeroStep(ternZero_t zero) {
  return guarded([&] { deref(zero, "ternZeroStep").step(); });
}
ternResult_t ternZeroSetLr(ternZero_t zero, float lr) {
  return guarded([&] { deref(zero, "ternZeroSetLr").setLr(lr); });
}
ternResult_t ternZeroGetMemory(ternZero_t zero, ternZeroMemory_t* memory) {
  return guarded([&] {
    requireOut(memory, "ternZeroGetMemory");
    *memory = deref(zero, "ternZeroGetMemory").memory();
  });
}
ternResult_t ternZeroGetStats(ternZero_t zero, ternZeroStats_t* stats) {
  return guarded([&] {
    requireOut(stats, "ternZeroGetStats");
    *stats = deref(zero, "ternZeroGetStats").stats();
  });
}
ternResult_t ternZeroDestroy(ternZero_t zero) {
  return guarded([&] { delete zero; });
}

ternResult_t ternMoeCreate(ternComm_t comm, const ternMoeConfig_t* config, ternMoe_t* moe) {
  return guarded([&] {
    requireOut(moe, "ternMoeCreate");
    *moe = new ternMoe(comm, deref(config, "ternMoeCreate config"));
  });
}
ternResult_t ternMoeDispatch(ternMoe_t moe, const float* tokens, size_t numTokens, const int* expertIds,
                             const float* gateWeights) {
  return guarded([&] { deref(moe, "ternMoeDispatch").dispatch(tokens, numTokens, expertIds, gateWeights); });
}
ternResult_t ternMoeExpertTokens(ternMoe_t moe, int localExpert, size_t* count) {
  return guarded([&] {
    requireOut(count, "ternMoeExpertTokens");
    *count = deref(moe, "ternMoeExpertTokens").expertTokens(localExpert);
  });
}
ternResult_t ternMoeExpertInput(ternMoe_t moe, int localExpert, const float** input) {
  return guarded([&] {
    requireOut(input, "ternMoeExpertInput");
    *input = deref(moe, "ternMoeExpertInput").expertInput(localExpert);
  });
}
ternResult_t ternMoeExpertOutput(ternMoe_t moe, int localExpert, float** output) {
  return guarded([&] {
    requireOut(output, "ternMoeExpertOutput");
    *output = deref(moe, "ternMoeExpertOutput").expertOutput(localExpert);
  });
}
ternResult_t ternMoeCombine(ternMoe_t moe, float* out) {
  return guarded([&] { deref(moe, "ternMoeCombine").combine(out); });
}
ternResult_t ternMoeCombineBackward(ternMoe_t moe, const float* gradOut, float* gradGates) {
  return guarded([&] { deref(moe, "ternMoeCombineBackward").combineBackward(gradOut, gradGates); });
}
ternResult_t ternMoeExpertGradOutput(ternMoe_t moe, int localExpert, const float** gradOutput) {
  return guarded([&] {
    requireOut(gradOutput, "ternMoeExpertGradOutput");
    *gradOutput = deref(moe, "ternMoeExpertGradOutput").expertGradOutput(localExpert);
  });
}
ternResult_t ternMoeExpertGradInput(ternMoe_t moe, int localExpert, float** gradInput) {
  return guarded([&] {
    requireOut(gradInput, "ternMoeExpertGradInput");
    *gradInput = deref(moe, "ternMoeExpertGradInput").expertGradInput(localExpert);
  });
}
ternResult_t ternMoeDispatchBackward(ternMoe_t moe, float* gradTokens) {
  return guarded([&] { deref(moe, "ternMoeDispatchBackward").dispatchBackward(gradTokens); });
}
ternResult_t ternMoeGetStats(ternMoe_t moe, ternMoeStats_t* stats) {
  return guarded([&] {
    requireOut(stats, "ternMoeGetStats");
    *stats = deref(moe, "ternMoeGetStats").stats();
  });
}
ternResult_t ternMoeDestroy(ternMoe_t moe) {
  return guarded([&] { delete moe; });
}

}  // extern "C"
