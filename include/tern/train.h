/*
 * tern training layers: data parallelism with overlapped, optionally compressed gradient buckets (DDP), ZeRO
 * stages 1-3 with SGD/Adam(W) on fp32 master weights, and mixture-of-experts token dispatch/combine.
 *
 * Everything here is built on the public API in tern/tern.h only (libtern_train links libtern and nothing
 * private), so it is also a worked example of driving that API from a training framework.
 *
 * Two faces:
 *  - C entry points (ternDdp*, ternZero*, ternOptimizer*, ternMoe*) that return ternResult_t; the message of the
 *    last failure on the calling thread is ternTrainGetLastError().
 *  - C++ classes in namespace tern::train (Ddp, Zero, Optimizer, Moe) that throw tern::train::Error.
 *
 * Threading: an object issues collectives on its communicator, so use it from the thread that issues that
 * communicator's operations, and give each object that may have operations in flight at the same time as another
 * (e.g. a Ddp and a Moe used in one step) a communicator of its own (ternCommSplit) or call them in the same
 * order on every rank. Collectives are matched by issue order, so every rank must make the same calls in the
 * same order; the classes below keep their own internal order deterministic for that reason.
 */
#ifndef TERN_TRAIN_H_
#define TERN_TRAIN_H_

#include <stddef.h>
#include <stdint.h>

#include "tern/tern.h"

#if defined(_WIN32)
#define TERN_TRAIN_API
#else
#define TERN_TRAIN_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------------------------
 * Common
 * ------------------------------------------------------------------------------------------------------------- */

/** Message of the last failure of a ternDdp/ternZero/ternOptimizer/ternMoe call on the calling thread. Never NULL;
 * empty when there was none. */
TERN_TRAIN_API const char* ternTrainGetLastError(void);

/* ---------------------------------------------------------------------------------------------------------------
 * Optimizers: element-wise updates of fp32 parameters. ZeRO uses them on its shards; with DDP, call one per
 * parameter (or per flat group) after ternDdpFinish.
 * ------------------------------------------------------------------------------------------------------------- */

typedef enum {
  ternOptSgd = 0,  /**< SGD with (heavy-ball) momentum: v = m*v + g (+ wd*p); p -= lr*v. */
  ternOptAdam = 1, /**< Adam with L2 weight decay added to the gradient. */
  ternOptAdamW = 2 /**< Adam with decoupled weight decay: p -= lr*wd*p before the Adam step. */
} ternOptimizerKind_t;

/** Optimizer hyper-parameters. Start from ternOptimizerConfigDefault. */
typedef struct {
  ternOptimizerKind_t kind;
  float lr;          /**< Learning rate (default 0.01). */
  float momentum;    /**< SGD momentum (default 0.9; 0 for plain SGD). */
  float beta1;       /**< Adam beta1 (default 0.9). */
  float beta2;       /**< Adam beta2 (default 0.999). */
  float eps;         /**< Adam epsilon (default 1e-8). */
  float weightDecay; /**< Weight decay (default 0). */
} ternOptimizerConfig_t;

/** Fills *config with the defaults of kind. */
TERN_TRAIN_API void ternOptimizerConfigDefault(ternOptimizerConfig_t* config, ternOptimizerKind_t kind);

typedef struct ternOptimizer* ternOptimizer_t;
/** Creates an optimizer owning the state (momentum, or Adam's two moments) of count elements. */
TERN_TRAIN_API ternResult_t ternOptimizerCreate(const ternOptimizerConfig_t* config, size_t count,
                                                ternOptimizer_t* optimizer);
/** One update: params[i] -= f(grads[i]) for the count elements given at creation. */
TERN_TRAIN_API ternResult_t ternOptimizerStep(ternOptimizer_t optimizer, float* params, const float* grads);
/** Changes the learning rate (schedules). */
TERN_TRAIN_API ternResult_t ternOptimizerSetLr(ternOptimizer_t optimizer, float lr);
TERN_TRAIN_API ternResult_t ternOptimizerDestroy(ternOptimizer_t optimizer);

/* ---------------------------------------------------------------------------------------------------------------
 * DDP: gradient buckets all-reduced asynchronously as they fill during backward.
 * ------------------------------------------------------------------------------------------------------------- */

/** DDP options. Start from ternDdpConfigDefault; zero sizes mean "default". */
typedef struct {
  size_t bucketBytes;       /**< Bucket capacity (default: TERN_BUCKET_MB megabytes, else 25 MB). */
  size_t firstBucketBytes;  /**< Capacity of the first bucket, the one filled first in backward: small so that
                                 communication starts early (default 1 MB, as PyTorch). */
  const char* compress;     /**< Codec spec for ternCompressorCreate ("sign", "qsgd:4", "topk:0.01", "fp16", "bf16"),
                                 one compressor (error-feedback state) per bucket; NULL, "" or "none" for none. */
  ternDataType_t wireDtype; /**< ternFloat32 (default), ternFloat16 or ternBfloat16: the type gradients travel and
                                 are summed in when not compressed. Gradients are accumulated in fp32. */
  int overlap;              /**< 1 (default): launch a bucket as soon as its gradients are ready; 0: launch all
                                 buckets in ternDdpFinish (no overlap, for comparison). */
  int accumulationSteps;    /**< Micro-steps per synchronisation (default 1): gradients of k micro-steps are summed
                                 locally and all-reduced once, on the k-th ternDdpFinish. */
  int broadcastParameters;  /**< 1 (default): ternDdpFinalize copies rank 0's parameters to every rank. */
} ternDdpConfig_t;

/** Fills *config with the defaults. */
TERN_TRAIN_API void ternDdpConfigDefault(ternDdpConfig_t* config);

/** Per-step statistics (of the last synchronising step unless said otherwise). */
typedef struct {
  double lastWaitSeconds;   /**< Exposed communication: time ternDdpFinish spent waiting for buckets. */
  double totalWaitSeconds;  /**< Sum of lastWaitSeconds over all steps. */
  int buckets;              /**< Number of buckets. */
  int bucketsLaunchedEarly; /**< Buckets launched before ternDdpFinish (overlapping backward). */
  size_t gradientBytes;     /**< fp32 gradient bytes all-reduced per synchronisation (before compression). */
  int64_t syncSteps;        /**< Synchronising steps so far. */
} ternDdpStats_t;

typedef struct ternDdp* ternDdp_t;
/** Creates a DDP reducer on comm (config may be NULL for the defaults). The communicator must outlive it. */
TERN_TRAIN_API ternResult_t ternDdpCreate(ternComm_t comm, const ternDdpConfig_t* config, ternDdp_t* ddp);
/** Registers a parameter (data) and its gradient buffer (grad), count elements of dtype (fp32, fp16 or bf16),
 * in forward order. Buckets are formed in reverse order, the order backward produces gradients in. *index
 * receives the handle to report the gradient with. Both buffers stay owned by the caller. */
TERN_TRAIN_API ternResult_t ternDdpAddParameter(ternDdp_t ddp, void* data, void* grad, size_t count,
                                                ternDataType_t dtype, int* index);
/** Ends registration: builds the buckets and compressors and (by default) broadcasts rank 0's parameters.
 * Collective. */
TERN_TRAIN_API ternResult_t ternDdpFinalize(ternDdp_t ddp);
/** Reports that grad of parameter index holds this micro-step's gradient; it is copied (or added, during
 * accumulation) into its bucket, and the bucket is launched once complete. */
TERN_TRAIN_API ternResult_t ternDdpGradReady(ternDdp_t ddp, int index);
/** Ends a micro-step. On a synchronising step: launches what is left (parameters never reported count as zero
 * gradients), waits for every bucket and writes into each grad buffer the gradient averaged over ranks and
 * micro-steps; *synced (may be NULL) is set to 1. On an accumulation-only step it only sets *synced to 0. */
TERN_TRAIN_API ternResult_t ternDdpFinish(ternDdp_t ddp, int* synced);
TERN_TRAIN_API ternResult_t ternDdpGetStats(ternDdp_t ddp, ternDdpStats_t* stats);
TERN_TRAIN_API ternResult_t ternDdpDestroy(ternDdp_t ddp);

/* ---------------------------------------------------------------------------------------------------------------
 * ZeRO: optimizer state (stage 1), + gradients (stage 2), + parameters (stage 3) sharded over ranks.
 *
 * ZeRO owns the parameters (so that it can shard them): register each with its initial values, then use
 * ternZeroParam / ternZeroGrad to reach the full tensors. Per step:
 *   forward:  for each layer l: ternZeroGather(l), compute with ternZeroParam, ternZeroRelease(l)
 *   backward: for each layer l (reverse): ternZeroGather(l), write ternZeroGrad, ternZeroGradReady per
 *             parameter, ternZeroRelease(l)
 *   ternZeroStep: waits for the gradient reductions, updates this rank's shard, re-assembles parameters.
 * Gather/Release are no-ops in stages 1-2, so the same loop serves every stage.
 * ------------------------------------------------------------------------------------------------------------- */

typedef struct {
  int stage;                       /**< 1, 2 or 3 (default 1). */
  ternOptimizerConfig_t optimizer; /**< The optimizer applied to the shards (default SGD, lr 0.01, momentum 0.9). */
  ternDataType_t paramDtype;       /**< Type of parameters and gradients as the model sees them: fp32 (default),
                                        fp16 or bf16. The optimizer always works on fp32 master weights. */
  size_t bucketBytes;              /**< Stages 1-2: gradient bucket capacity (default as DDP). */
  int overlap;                     /**< 1 (default): reduce a bucket/layer as soon as its gradients are ready. */
  int prefetch;                    /**< Stage 3, 1 (default): when layer l is gathered, start gathering the layer
                                        that followed l in the previous step. */
} ternZeroConfig_t;

TERN_TRAIN_API void ternZeroConfigDefault(ternZeroConfig_t* config);

/** Bytes of memory this rank holds for the model, by kind (padding included). */
typedef struct {
  size_t paramBytes;     /**< Parameters now: full copies (stages 1-2) or shards plus gathered layers (3). */
  size_t paramPeakBytes; /**< Peak of paramBytes. */
  size_t gradBytes;      /**< Gradients now. */
  size_t gradPeakBytes;  /**< Peak of gradBytes (transient full-size gradients in stages 2-3). */
  size_t optimizerBytes; /**< fp32 master weights (when separate from the parameters) + optimizer state. */
  size_t modelElements;  /**< Parameters of the whole model (all ranks), for reference. */
} ternZeroMemory_t;

typedef struct {
  double lastWaitSeconds;  /**< Exposed communication of the last step: waits for reductions, parameter
                                all-gathers and (stage 3) gathers not hidden by prefetch. */
  double totalWaitSeconds; /**< Sum over steps. */
  int64_t steps;
} ternZeroStats_t;

typedef struct ternZero* ternZero_t;
TERN_TRAIN_API ternResult_t ternZeroCreate(ternComm_t comm, const ternZeroConfig_t* config, ternZero_t* zero);
/** Registers a parameter of count elements in layer (layers are stage 3's gather units; number them in forward
 * order). init (count values of paramDtype, may be NULL for zeros) is copied; rank 0's values win. */
TERN_TRAIN_API ternResult_t ternZeroAddParameter(ternZero_t zero, int layer, size_t count, const void* init,
                                                 int* index);
/** Ends registration: shards, allocates and broadcasts the initial values. Collective. */
TERN_TRAIN_API ternResult_t ternZeroFinalize(ternZero_t zero);
/** Makes the full parameters of layer available (stage 3: waits for its prefetch or gathers it now). */
TERN_TRAIN_API ternResult_t ternZeroGather(ternZero_t zero, int layer);
/** Frees the full parameters of layer (stage 3). */
TERN_TRAIN_API ternResult_t ternZeroRelease(ternZero_t zero, int layer);
/** The full parameter (paramDtype). Stage 3: valid between Gather and Release of its layer. */
TERN_TRAIN_API ternResult_t ternZeroParam(ternZero_t zero, int index, void** data);
/** The buffer to write the full gradient of parameter index into (paramDtype), valid until its GradReady. */
TERN_TRAIN_API ternResult_t ternZeroGrad(ternZero_t zero, int index, void** grad);
/** Reports that the gradient of index is written. */
TERN_TRAIN_API ternResult_t ternZeroGradReady(ternZero_t zero, int index);
/** Waits for reductions, steps the optimizer on this rank's shard and re-assembles parameters. Parameters whose
 * gradient was never reported count as zero gradients (in stage 3 that set must be the same on every rank). */
TERN_TRAIN_API ternResult_t ternZeroStep(ternZero_t zero);
TERN_TRAIN_API ternResult_t ternZeroSetLr(ternZero_t zero, float lr);
TERN_TRAIN_API ternResult_t ternZeroGetMemory(ternZero_t zero, ternZeroMemory_t* memory);
TERN_TRAIN_API ternResult_t ternZeroGetStats(ternZero_t zero, ternZeroStats_t* stats);
TERN_TRAIN_API ternResult_t ternZeroDestroy(ternZero_t zero);

/* ---------------------------------------------------------------------------------------------------------------
 * Mixture of experts: dispatch tokens to the ranks that own their experts and combine the results.
 *
 * Expert e lives on rank e / (numExperts / nranks). Per step:
 *   ternMoeDispatch (tokens, top-k expert ids and gate weights) -> each local expert j reads ternMoeExpertInput,
 *   writes ternMoeExpertOutput -> ternMoeCombine gives, per token, sum_k gate_k * expert_k(token).
 * Backward mirrors it: ternMoeCombineBackward (gradient of the combined output) -> experts read
 * ternMoeExpertGradOutput, write ternMoeExpertGradInput -> ternMoeDispatchBackward gives the token gradients.
 * Capacity: each rank sends each expert at most ceil(capacityFactor * tokens * topK / numExperts) tokens; later
 * assignments (all first choices go before second choices, then token order) are dropped and contribute zero.
 * ------------------------------------------------------------------------------------------------------------- */

typedef struct {
  int numExperts;       /**< Total experts, a multiple of the rank count. */
  int topK;             /**< Experts per token (1 or 2 typically; default 1). */
  float capacityFactor; /**< Default 1.25; <= 0 for unlimited capacity (no drops). */
  size_t hidden;        /**< Elements per token going to the experts. */
  size_t outHidden;     /**< Elements per token coming back (0: same as hidden). */
} ternMoeConfig_t;

TERN_TRAIN_API void ternMoeConfigDefault(ternMoeConfig_t* config);

typedef struct {
  size_t tokens;             /**< Tokens given to the last dispatch on this rank. */
  size_t assignments;        /**< Token-expert assignments among them (tokens * topK, less negative ids). */
  size_t dropped;            /**< Assignments dropped for capacity in the last dispatch. */
  size_t capacity;           /**< Per-expert capacity of this rank's tokens in the last dispatch. */
  size_t received;           /**< Token rows this rank's experts received in the last dispatch. */
  uint64_t totalAssignments; /**< Since creation. */
  uint64_t totalDropped;     /**< Since creation. */
} ternMoeStats_t;

typedef struct ternMoe* ternMoe_t;
TERN_TRAIN_API ternResult_t ternMoeCreate(ternComm_t comm, const ternMoeConfig_t* config, ternMoe_t* moe);
/** Collective. tokens: numTokens x hidden fp32; expertIds, gateWeights: numTokens x topK (an id < 0 means no
 * expert). The inputs are copied. */
TERN_TRAIN_API ternResult_t ternMoeDispatch(ternMoe_t moe, const float* tokens, size_t numTokens, const int* expertIds,
                                            const float* gateWeights);
/** Tokens routed to local expert localExpert (0 .. numExperts/nranks - 1) in the last dispatch. */
TERN_TRAIN_API ternResult_t ternMoeExpertTokens(ternMoe_t moe, int localExpert, size_t* count);
/** count x hidden inputs of a local expert. */
TERN_TRAIN_API ternResult_t ternMoeExpertInput(ternMoe_t moe, int localExpert, const float** input);
/** count x outHidden buffer the local expert writes its outputs into. */
TERN_TRAIN_API ternResult_t ternMoeExpertOutput(ternMoe_t moe, int localExpert, float** output);
/** Collective. out: numTokens x outHidden, sum over kept assignments of gate * expert output. */
TERN_TRAIN_API ternResult_t ternMoeCombine(ternMoe_t moe, float* out);
/** Collective. gradOut: numTokens x outHidden. gradGates (numTokens x topK, may be NULL) receives d/dgate. */
TERN_TRAIN_API ternResult_t ternMoeCombineBackward(ternMoe_t moe, const float* gradOut, float* gradGates);
/** count x outHidden gradient of a local expert's outputs (after ternMoeCombineBackward). */
TERN_TRAIN_API ternResult_t ternMoeExpertGradOutput(ternMoe_t moe, int localExpert, const float** gradOutput);
/** count x hidden buffer the local expert writes the gradient of its inputs into. */
TERN_TRAIN_API ternResult_t ternMoeExpertGradInput(ternMoe_t moe, int localExpert, float** gradInput);
/** Collective. gradTokens: numTokens x hidden, the gradient of the dispatched tokens. */
TERN_TRAIN_API ternResult_t ternMoeDispatchBackward(ternMoe_t moe, float* gradTokens);
TERN_TRAIN_API ternResult_t ternMoeGetStats(ternMoe_t moe, ternMoeStats_t* stats);
TERN_TRAIN_API ternResult_t ternMoeDestroy(ternMoe_t moe);

#ifdef __cplusplus
}  // extern "C"

#include <memory>
#include <stdexcept>
#include <string>

namespace tern::train {

/** Thrown by the C++ classes; result() is the ternResult_t the C entry points return for it. */
class TERN_TRAIN_API Error : public std::runtime_error {
 public:
  Error(ternResult_t result, const std::string& message) : std::runtime_error(message), result_(result) {}
  ternResult_t result() const { return result_; }

 private:
  ternResult_t result_;
};

/** Element-wise optimizer over count fp32 values (see ternOptimizerConfig_t). */
class TERN_TRAIN_API Optimizer {
 public:
  Optimizer(const ternOptimizerConfig_t& config, size_t count);
  ~Optimizer();
  Optimizer(Optimizer&&) noexcept;
  Optimizer& operator=(Optimizer&&) noexcept;

  /** One update of params from grads (count elements each). */
  void step(float* params, const float* grads);
  void setLr(float lr);
  size_t count() const;
  /** Bytes of optimizer state (momentum or the two Adam moments). */
  size_t stateBytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/** C++ face of ternDdp (same semantics; see the C functions). */
class TERN_TRAIN_API Ddp {
 public:
  explicit Ddp(ternComm_t comm, const ternDdpConfig_t* config = nullptr);
  ~Ddp();
  Ddp(const Ddp&) = delete;
  Ddp& operator=(const Ddp&) = delete;

  int addParameter(void* data, void* grad, size_t count, ternDataType_t dtype = ternFloat32);
  void finalize();
  void gradReady(int index);
  /** Returns true on a synchronising step (grads now hold the averaged gradients). */
  bool finish();
  ternDdpStats_t stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/** C++ face of ternZero. */
class TERN_TRAIN_API Zero {
 public:
  explicit Zero(ternComm_t comm, const ternZeroConfig_t* config = nullptr);
  ~Zero();
  Zero(const Zero&) = delete;
  Zero& operator=(const Zero&) = delete;

  int addParameter(int layer, size_t count, const void* init);
  void finalize();
  void gather(int layer);
  void release(int layer);
  void* param(int index);
  void* grad(int index);
  void gradReady(int index);
  void step();
  void setLr(float lr);
  ternZeroMemory_t memory() const;
  ternZeroStats_t stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/** C++ face of ternMoe. */
class TERN_TRAIN_API Moe {
 public:
  Moe(ternComm_t comm, const ternMoeConfig_t& config);
  ~Moe();
  Moe(const Moe&) = delete;
  Moe& operator=(const Moe&) = delete;

  int localExperts() const;
  /** Global id of local expert 0. */
  int firstExpert() const;
  void dispatch(const float* tokens, size_t numTokens, const int* expertIds, const float* gateWeights);
  size_t expertTokens(int localExpert) const;
  const float* expertInput(int localExpert) const;
  float* expertOutput(int localExpert);
  void combine(float* out);
  void combineBackward(const float* gradOut, float* gradGates);
  const float* expertGradOutput(int localExpert) const;
  float* expertGradInput(int localExpert);
  void dispatchBackward(float* gradTokens);
  ternMoeStats_t stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tern::train

#endif  // __cplusplus

#endif  // TERN_TRAIN_H_
