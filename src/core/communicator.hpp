// The communicator: owns the transport connections to every peer, the schedule cache and scratch memory, and
// runs operations in issue order.
//
// Progress model: a blocking call on an idle communicator runs on the calling thread (no hand-off latency). Async
// calls, and any call issued while earlier async ones are still pending, go to a per-communicator worker thread
// that is created on first use and sleeps on a condition variable when idle, so a 2-core machine pays nothing for
// it unless overlap is actually used.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "algorithms/shm/intra_node.hpp"
#include "base/unique_id.hpp"
#include "core/algo_choice.hpp"
#include "core/compressor.hpp"
#include "core/network_learning.hpp"
#include "exec/executor.hpp"
#include "exec/operation.hpp"
#include "exec/schedule.hpp"
#include "transport/transport.hpp"

namespace tern {

namespace planner {
class Planner;
}  // namespace planner
namespace compress {
class DeviceCodecs;
}  // namespace compress
class TcpTransport;
struct ChoiceContext;
class DeviceStreams;
class NcclDeviceEngine;
class StagedDeviceCalls;
class DeviceCompressedCalls;

struct CommOptions {
  int timeoutMs = 300000;
  int socketsPerPeer = 2;
  std::string algo;
  std::string name;
  std::string compress;  // the implicit codec (TERN_COMPRESS, or ternConfig_t.compress); "" for none
};

CommOptions resolveOptions(const ternConfig_t* config);

// Tests only (tests/unit/abort_safety_test.cpp): called on the thread that runs each operation, just before it
// reaches the transport, so that a test can hold a call in flight past abort's wait. Null otherwise (one relaxed
// load per operation).
inline std::atomic<void (*)(int rank)> callHookForTesting{nullptr};

class Communicator {
 public:
  static std::unique_ptr<Communicator> create(int nranks, const UniqueIdData& id, int rank, const CommOptions& opts);
  // The shared ownership the C API hands out: every call in flight holds a reference, so the communicator outlives
  // an abort or destroy from another thread until the last call leaves. The last reference stops the worker within
  // a deadline and frees the communicator, or, when an operation still runs past it, logs and leaks it (bounded:
  // one object per stuck communicator) rather than hang or free memory in use.
  static std::shared_ptr<Communicator> share(std::unique_ptr<Communicator> comm);
  ~Communicator();

  // ternCommInitFromEnv: rank, size, root and secret from the launcher's environment (core/env_init.hpp); rank 0
  // starts the bootstrap root, then every rank joins as create does. config as resolveOptions takes it.
  static std::unique_ptr<Communicator> createFromEnvironment(const ternConfig_t* config);
  // An id for a new communicator: of ranks that are threads of this process (inproc), else of a TCP bootstrap
  // root this process starts and that waits TERN_TIMEOUT for the ranks.
  static UniqueIdData newUniqueId(bool inproc);
  // ternCommSplit, collective over this communicator: every rank learns every (color, key); the ranks of a color,
  // ordered by key then by rank here, form a new communicator whose first member makes its id. config null: the new
  // communicator inherits this one's timeout, sockets per peer and algorithm override. nullptr for a negative color
  // (that rank joins none, but takes part in the exchange).
  std::unique_ptr<Communicator> split(int color, int key, const ternConfig_t* config);

  int rank() const { return rank_; }
  int size() const { return nranks_; }
  const std::vector<std::string>& hostIds() const { return hostIds_; }
  // The job topology every rank assembled alike at init (topo/assemble.hpp): what the cost model prices.
  const topo::JobTopology& jobTopology() const { return *job_; }
  const CommOptions& options() const { return options_; }
  const char* transportName() const { return transport_ ? transport_->name() : network_->name(); }

  // Queues op (or runs it inline when possible). If blocking, returns after it finished.
  void submit(const std::shared_ptr<Operation>& op, bool blocking);
  // A blocking call: submit inside enterCall/exitCall; throws the operation's error.
  void runBlocking(const std::shared_ptr<Operation>& op);
  // Aborts from any thread: wakes every wait, makes peers fail, waits a bounded time (the timeout, at most 5 s) for
  // calls in progress to leave. A call still inside after that keeps the communicator alive (share()).
  void abort(const std::string& reason);
  ternResult_t asyncError();
  std::string lastError();
  // A stream-ordered call failed after its API call returned: the communicator fails, as an NCCL communicator
  // does, so that ternCommGetAsyncError reports it and the peers stop waiting.
  void recordAsyncFailure(ternResult_t code, const std::string& message);
  // The stream-ordered device path's staging (core/staged_device_calls.hpp), made on first use.
  StagedDeviceCalls& stagedDeviceCalls(DeviceStreams& streams);
  // NCCL as the engine of uncompressed stream-ordered calls (core/nccl_device_engine.hpp), or nullptr for staging.
  // Decided collectively at the first stream-ordered call (every rank makes it at the same point of the call order):
  // TERN_DEVICE_ENGINE, and whether every rank can load NCCL; then the NCCL communicator is made.
  NcclDeviceEngine* ncclEngine(const DeviceStreams& streams);
  // Whether every rank has the codecs on the device (DeviceStreams::hasCodecs), as agreed by ncclEngine's decision
  // (false before it): where any rank lacks them, TERN_COMPRESS calls on device buffers stage and encode on the CPU
  // without a vote.
  bool deviceCodecsEverywhere() const { return deviceCodecsEverywhere_; }
  // This rank's model's answer to "NCCL or staging" for an uncompressed stream-ordered call of args: the cheaper
  // engine by the cost model (core/device_engine_choice.hpp), logged (TERN_DEBUG=INFO, subsystem TUNE) with both
  // estimates. Where no rank's GPU is in the job topology NCCL is unpriced and preferred. Decides nothing alone:
  // devicePlan makes the ranks agree.
  bool ncclPreferred(const CollArgs& args);
  // Compressed allreduces on device buffers with the codecs on the device (core/device_compressed_calls.hpp), made
  // on first use.
  DeviceCompressedCalls& deviceCompressedCalls(DeviceStreams& streams, compress::DeviceCodecs& codecs);
  // How a stream-ordered call runs, as every rank agreed.
  struct DevicePlan {
    bool compress = false;      // TERN_COMPRESS compresses it with the codecs on the device
    bool hierarchical = false;  // ... in the hierarchical form (compressHierFor)
    bool nccl = false;          // uncompressed, NCCL runs it (else staging through pinned memory)
  };
  // The plan of a stream-ordered call of args. compressible: TERN_COMPRESS may compress it on the device (an
  // allreduce that mayCompressImplicitly allows, where deviceCodecsEverywhere); codecsOnDevice: this rank has device
  // codecs for the call's stream and its buffers are device memory; ncclUp: ncclEngine made an NCCL communicator that
  // runs this kind of call.
  //
  // Where the answer needs the cost model (compression, or the engine where TERN_DEVICE_ENGINE leaves it to the
  // model and the job places GPUs), the ranks vote by one all-gather in call order at the first call of each shape
  // (collective, count, dtype, in place, compressible, ncclUp): compression where every rank would compress, the
  // engine of rank 0's model. A vote is needed because these calls are decided on the caller's thread while the
  // model may change on the communicator's thread (recordTimedCall): two ranks could otherwise price the same call
  // with different models. While any rank is still learning the network, the shape votes again at its 16th, 32nd,
  // 64th ... call, so that the learned model takes over (a job whose device calls all run on NCCL times none of them
  // and so keeps voting, ever more rarely); once every rank's model is settled, the plan is kept. A vote runs in call
  // order, so the caller waits for the stream-ordered calls queued before it. A later call of a shape agreed to
  // compress that brings host buffers is refused (ternInvalidUsage) rather than run differently from its peers.
  DevicePlan devicePlan(const CollArgs& args, bool compressible, bool codecsOnDevice, bool ncclUp);
  // The error-feedback compressor of a stream-ordered allreduce the ranks agreed to compress on the device
  // (devicePlan), keyed by its output buffer; refuses host buffers (onDevice false).
  Compressor* deviceCompressor(const CollArgs& args, void* recvbuff, bool onDevice);
  // The host index of every rank (empty on one host), fixed at creation.
  const std::vector<int>& hostOf() const { return hostOf_; }
  // What ran the last call (ternCommLastAlgorithm).
  void noteAlgorithm(std::string_view name);
  // The same for a name with static storage (the shared-memory algorithms' names): no lock, no copy, as the
  // small direct calls it records cost a microsecond.
  void noteStaticAlgorithm(const char* name) { lastStaticAlgorithm_.store(name, std::memory_order_release); }

  // Bracket API calls so that abort can wait for calls in flight to notice it. The caller holds a reference
  // (share()), so the communicator is alive until exitCall has returned.
  void enterCall() { activeCalls_.fetch_add(1); }
  void exitCall();

  // Error-feedback state for compression by default (TERN_COMPRESS): one per (buffer, count, dtype), created on
  // first use. The thread running the communicator's calls uses it, and so do stream-ordered calls on device
  // buffers from their callers' threads (their compressors are their own: keyed by device addresses).
  Compressor* defaultCompressor(const void* key, size_t count, ternDataType_t dtype);
  // Whether TERN_COMPRESS should compress this allreduce: the cost model's compressed time (codec work included)
  // beats the uncompressed algorithm it would run, or TERN_COMPRESS_WHEN=always. Decided once per (count, dtype);
  // every rank decides the same, from the same model (decisions are dropped when the model learns the network).
  // onDevice: for a call on device buffers, priced on the GPUs' links against the device engine that would run it
  // (not cached here: devicePlan keeps the agreed decision).
  bool compressionPays(const CollArgs& args, const std::string& codecSpec, bool onDevice = false);
  // Whether TERN_COMPRESS may compress a plain allreduce of args (a float sum/avg allreduce above
  // TERN_COMPRESS_MIN_BYTES on several ranks); checked when the call is made, where a bad TERN_COMPRESS throws
  // ternInvalidArgument. Whether it pays is decided when the call runs (implicitCompressor).
  // The compressor TERN_COMPRESS gives a plain allreduce of args into recvbuff: large float sum/avg allreduces of
  // unmodified programs where compressionPays (slow links; not shared memory or small calls), one error-feedback
  // state per (receive buffer, count, dtype), i.e. per gradient tensor of a training loop. nullptr: uncompressed.
  Compressor* implicitCompressor(const CollArgs& args, void* recvbuff);
  bool mayCompressImplicitly(const CollArgs& args);

  // The algorithm that will run for args (for logs and perf JSON).
  std::string algorithmFor(const CollArgs& args);
  // The cost model's decision for args (TERN_ALGO, the planner, the intra-node direct path), and the predicted time
  // of a decision in seconds for the exact size of args (0 when the model has none).
  Choice choose(const CollArgs& args);
  // choose(args).direct without copying the decision (its name would cost a heap allocation on every small call).
  bool runsDirect(const CollArgs& args);
  double predictSeconds(const CollArgs& args, const Choice& choice);
  // The compressed algorithm for args with a codec spec, and its predicted seconds (0 when not priced).
  std::string compressedAlgorithmFor(const CollArgs& args, const std::string& codecSpec, double* seconds);
  // The algorithm that ran the last collective this rank completed (ternCommLastAlgorithm); "" before the first.
  std::string lastAlgorithm() const;

 private:
  Communicator(int rank, int nranks, const CommOptions& opts);
  // Runs op and returns how it ended; the caller publishes that (Operation::finish) once busy_ is clear, so that a
  // caller woken by the finish never sees its own finished call as work in progress (asyncError).
  struct Outcome {
    ternResult_t code = ternSuccess;
    std::string message;
  };
  Outcome execute(Operation& op);
  // A call's fatal error: fail() the communicator, then withdraw the call's transfers before the caller returns.
  Outcome failCall(ternResult_t code, const std::string& message);
  void waitForGate(Operation& op);
  void runCollective(Operation& op);
  // A reduce-scatter whose output lies over another rank's block of its input (tern.h's recvbuff == sendbuff form):
  // run into scratch, then moved into place.
  void runReduceScatterViaScratch(Operation& op);
  // A one-rank AlltoAllv: its one block, copied (counts that differ are refused, as on more ranks).
  void runSelfAlltoAllv(const Operation& op) const;
  void runPointToPoint(Operation& op);
  void runCompressed(Operation& op);
  // Whether a compressed call runs as compressed_hier: where it applies, TERN_COMPRESS_HIER or the cheaper form.
  bool compressHierFor(const CollArgs& args, const compress::Codec& codec, bool onDevice = false);
  ChoiceContext choiceContext();
  // Init: every rank's topology record (its host's graph from the lowest rank of each host, where each rank is
  // bound), exchanged over the connected transport, assembled into the job; rank 0 of the process's first
  // communicator writes it to TERN_TOPO_DUMP_FILE.
  std::shared_ptr<const topo::JobTopology> assembleJobTopology(Clock::time_point deadline);
  // An allgather of equal-sized byte blocks over the communicator's transport (the ring schedule), before the
  // cost model exists.
  void allgatherBytes(const void* input, void* output, size_t bytes, Clock::time_point deadline);
  DirectOption directOption(const CollArgs& args);
  // The schedule for args; *algorithm (when given) the name of the algorithm it was built from.
  std::shared_ptr<const Schedule> scheduleFor(const CollArgs& args, std::string* algorithm = nullptr);
  // After a timed call (NetworkLearning): at the last one every rank agrees on the times over the transport,
  // learns the network, and prices every later call with it (the choices and compression decisions made so far
  // are dropped); rank 0 writes the parameters to TERN_TUNE_DUMP_FILE.
  void recordTimedCall(const CollArgs& args, const std::string& algorithm, double seconds);
  // The cost model in force (it changes once, when the network has been learned); null for one rank.
  std::shared_ptr<const planner::Planner> currentPlanner() const;
  // The same for device buffers: null where the job places no rank on a GPU.
  std::shared_ptr<const planner::Planner> currentDevicePlanner() const;
  void* scratch(size_t bytes);
  // op's buffers as the executor takes them (sizes from the call's shape, memory kinds classified) with scratch
  // for schedule.
  ExecBuffers buffersOf(const Operation& op, const Schedule& schedule);
  // Records the communicator's first failure and aborts the transports so that peers fail too; returns the error
  // this call reports. On the first failure over a TCP mesh it first finds out which rank was lost (a peer's notice,
  // closed connections, or a ping round after a timeout) and tells every peer, so that the whole job names the rank
  // that was lost, not the neighbour that gave up because of it.
  std::string fail(ternResult_t code, const std::string& message);
  void workerLoop();
  // Waits until deadline for queued and running operations to finish, then stops the worker. False (the worker
  // still running) when an operation is still executing at the deadline.
  bool stopWorker(Clock::time_point deadline);
  // share()'s deleter: stop within a deadline, then free; or leak when an operation is stuck.
  static void release(Communicator* comm);
  Transport& active() { return transport_ ? *transport_ : *network_; }

  int rank_;
  int nranks_;
  CommOptions options_;
  bool inproc_ = false;
  std::vector<std::string> hostIds_;
  std::vector<int> hostOf_;             // host index of every rank (hostIndexOf), empty on one host; fixed at creation
  std::unique_ptr<Transport> control_;  // the TCP mesh when the data network is UCX/ibverbs (liveness)
  std::unique_ptr<Transport> network_;  // tcp, ucx, ibverbs or inproc: reaches every peer
  std::unique_ptr<IntraNode> intraNode_;  // same-host fast path, when there is one
  std::unique_ptr<Transport> transport_;  // what schedules run on (network_, or routed over both)
  TcpTransport* mesh_ = nullptr;          // the TCP mesh (network_ or control_), when there is one: failure notices
  std::atomic<bool> aborted_{false};
  // The device path (communicator_device.cpp): made on first use, guarded by deviceMutex_.
  std::mutex deviceMutex_;
  std::unique_ptr<StagedDeviceCalls> staged_;
  bool deviceEngineDecided_ = false;
  std::atomic<bool> deviceCodecsEverywhere_{false};  // set by ncclEngine
  std::unique_ptr<NcclDeviceEngine> nccl_;
  std::unique_ptr<DeviceCompressedCalls> deviceCompressed_;
  // The cost model of calls on device buffers: the planner over the job's GPU placements (the host planner prices
  // every rank as a CPU), made at init and renewed with the learned network; nullptr when the job places no rank on
  // a GPU. Under plannerMutex_ (currentDevicePlanner).
  std::shared_ptr<const planner::Planner> devicePlanner_;
  // Whether this rank's models will not change any more: one host, learning off or replaced by a tune file, or the
  // network learned (or given up on). Set on the communicator's thread, read by devicePlan's vote.
  std::atomic<bool> modelSettled_{false};
  struct AgreedDevicePlan {
    DevicePlan plan;
    bool final = false;      // every rank's model was settled when it was agreed
    uint64_t calls = 0;      // calls of the shape so far
    uint64_t voteAgain = 0;  // the call at which a plan that is not final is voted again
  };
  std::mutex devicePlanMutex_;  // devicePlans_; held across a vote, so one decision at a time
  // (collective, count, dtype, in place, compressible, NCCL up) -> the plan; shapes that voted only
  using DevicePlanKey = std::tuple<int, size_t, int, bool, bool, bool>;
  std::map<DevicePlanKey, AgreedDevicePlan> devicePlans_;
  static constexpr size_t kDevicePlanEntries = 512;  // a sweep over many sizes: start over
  ternResult_t deviceAsyncError();
  void abortDeviceEngines();

  // What a built schedule depends on: the call's shape and the algorithm that runs it (for compressed calls,
  // "compressed/" and the codec's spec). Compared field by field, so a call finds its schedule without formatting.
  struct ScheduleKey {
    Collective coll;
    size_t count;
    ternDataType_t dtype;
    ternRedOp_t op;
    int root;
    bool inPlace;
    std::string algorithm;
    std::vector<size_t> sendCounts, sendDispls, recvCounts, recvDispls;
    // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 flags the 0 of the defaulted comparison it synthesizes
    auto operator<=>(const ScheduleKey&) const = default;
  };
  static ScheduleKey scheduleKey(const CollArgs& args, std::string algorithm);
  mutable std::mutex lastAlgorithmMutex_;  // the call runs on the worker thread, the question comes from the user's
  std::string lastAlgorithm_;
  std::atomic<const char*> lastStaticAlgorithm_{nullptr};  // set: it, not lastAlgorithm_, names the last call
  // runPointToPoint's transfer states and its sends to / receives from self, reused from call to call.
  std::vector<Transfer> p2pTransfers_;
  std::vector<const UserTransfer*> p2pSelfSends_, p2pSelfRecvs_;
  std::map<ScheduleKey, std::shared_ptr<const Schedule>> scheduleCache_;
  std::unique_ptr<char[], void (*)(void*)> scratch_{nullptr, nullptr};
  size_t scratchBytes_ = 0;

  std::mutex queueMutex_;
  std::condition_variable queueChanged_;
  std::deque<std::shared_ptr<Operation>> queue_;
  bool busy_ = false;  // an op is executing (inline or on the worker)
  bool stopping_ = false;
  std::thread worker_;

  std::mutex errorMutex_;
  std::atomic<bool> failed_{false};  // written under errorMutex_; read without it on the call path
  ternResult_t failure_ = ternSuccess;
  std::string lastError_;

  std::mutex compressMutex_;  // the two maps below: the worker and stream-ordered callers both reach them
  std::map<std::tuple<const void*, size_t, int>, std::unique_ptr<Compressor>> defaultCompressors_;
  std::map<std::pair<size_t, int>, bool> compressionPays_;  // (count, dtype) -> compressionPays
  std::shared_ptr<const topo::JobTopology> job_;
  std::shared_ptr<const planner::Planner> planner_;  // under plannerMutex_ (currentPlanner)
  mutable std::mutex plannerMutex_;
  NetworkLearning learning_{0, 0};  // set up by create
  bool multiHost_ = false;
  AlgoOverride algoOverride_;  // TERN_ALGO / config.algo, parsed once
  // choose()'s decisions by call shape: pricing the candidates costs microseconds, a small collective's whole
  // budget. The decision depends on nothing else (the cost model and topology are fixed for the communicator).
  using ChoiceKey = std::tuple<int, size_t, int, int, int, bool>;  // collective, count, dtype, op, root, in place
  std::map<ChoiceKey, Choice> choiceCache_;
  static ChoiceKey choiceKey(const CollArgs& a) {
    return {static_cast<int>(a.coll), a.count, static_cast<int>(a.dtype), static_cast<int>(a.op), a.root, a.inPlace};
  }
  const Choice* cachedChoice(const ChoiceKey& key);  // under choiceMutex_; nullptr when not decided yet
  ChoiceKey lastChoiceKey_{};
  const Choice* lastChoice_ = nullptr;  // into choiceCache_ (map nodes do not move; reset when it is cleared)
  std::mutex choiceMutex_;
  // Whether alltoallv runs on the shared-memory path: 1 yes, 0 no, -1 not decided yet. Its counts keep it out of
  // choiceCache_, but without TERN_ALGO rules the answer depends only on where the ranks are (runsDirect).
  std::atomic<int> alltoallvDirect_{-1};

  std::atomic<int> activeCalls_{0};
  std::mutex callsMutex_;
  std::condition_variable callsChanged_;
};

}  // namespace tern
