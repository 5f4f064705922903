#include "core/communicator.hpp"

#include <pthread.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "algorithms/compressed.hpp"
#include "base/dtype.hpp"
#include "base/env.hpp"
#include "base/error.hpp"
#include "base/host_id.hpp"
#include "base/log.hpp"
#include "compress/codec_factory.hpp"
#include "core/algo_choice.hpp"
#include "core/compressor.hpp"
#include "core/device_compressed_calls.hpp"
#include "core/device_engine_choice.hpp"
#include "core/device_streams.hpp"
#include "core/nccl_device_engine.hpp"
#include "core/staged_device_calls.hpp"
#include "exec/executor.hpp"
#include "planner/calibration.hpp"
#include "planner/planner.hpp"
#include "planner/units.hpp"
#include "topo/assemble.hpp"
#include "topo/local_topology.hpp"
#include "topo/topo_file.hpp"
#include "transport/bootstrap.hpp"
#include "transport/inproc/inproc_transport.hpp"
#include "transport/routed_transport.hpp"
#include "transport/shm/buffer_registry.hpp"
#include "transport/tcp/tcp_transport.hpp"
#include "transport/transport_registry.hpp"

namespace tern {

namespace {

// Distinct call shapes whose algorithm decisions a communicator remembers (Communicator::choose).
constexpr size_t kChoiceCacheEntries = 1024;

bool isFatal(ternResult_t code) { return code != ternInvalidArgument; }

// Host index of every rank (BuildOptions::hostOf): ranks with the same host id share one; empty on one host.
std::vector<int> hostIndexOf(const std::vector<std::string>& hostIds) {
  std::map<std::string, int> hostIndex;
  std::vector<int> hostOf;
  for (const auto& h : hostIds) {
    if (!hostIndex.count(h)) hostIndex.emplace(h, static_cast<int>(hostIndex.size()));
    hostOf.push_back(hostIndex[h]);
  }
  if (hostIndex.size() == 1) hostOf.clear();
  return hostOf;
}

}  // namespace

CommOptions resolveOptions(const ternConfig_t* config) {
  requireValidKnobs("ternCommInitRank");
  CommOptions o;
  const Knobs& k = knobs();
  o.timeoutMs = k.timeoutSec * 1000;
  o.socketsPerPeer = k.nSocketsPerPeer;
  o.algo = k.algo;
  o.compress = k.compress;
  const char* compressFrom = "TERN_COMPRESS";
  // Whether a config from an older header (its size says how far it reaches) holds a field.
  const auto holds = [config](size_t offset, size_t bytes) { return config->size >= offset + bytes; };
  if (config != nullptr) {
    if (config->magic != TERN_CONFIG_MAGIC || config->size < offsetof(ternConfig_t, commName)) {
      throwError(ternInvalidArgument, "config was not initialized with TERN_CONFIG_INITIALIZER");
    }
    if (config->timeoutMs != TERN_CONFIG_UNDEF_INT) {
      if (config->timeoutMs <= 0) throwError(ternInvalidArgument, "config.timeoutMs must be > 0");
      o.timeoutMs = config->timeoutMs;
    }
    if (config->nSocketsPerPeer != TERN_CONFIG_UNDEF_INT) o.socketsPerPeer = config->nSocketsPerPeer;
    if (config->algo != nullptr) o.algo = config->algo;
    if (holds(offsetof(ternConfig_t, commName), sizeof(config->commName)) && config->commName != nullptr) {
      o.name = config->commName;
    }
    if (holds(offsetof(ternConfig_t, compress), sizeof(config->compress)) && config->compress != nullptr) {
      o.compress = config->compress;
      compressFrom = "config.compress";
    }
  }
  AlgoOverride::parse(o.algo);  // validate early: a bad TERN_ALGO fails init with a clear message
  if (!o.compress.empty()) {
    try {
      compress::makeCodec(o.compress);  // likewise a codec that does not parse
    } catch (const Error& e) {
      throwError(ternInvalidArgument, "%s \"%s\": %s", compressFrom, o.compress.c_str(), e.what());
    }
  }
  return o;
}

Communicator::Communicator(int rank, int nranks, const CommOptions& opts)
    : rank_(rank), nranks_(nranks), options_(opts) {}

std::unique_ptr<Communicator> Communicator::create(int nranks, const UniqueIdData& id, int rank,
                                                   const CommOptions& opts) {
  std::unique_ptr<Communicator> c(new Communicator(rank, nranks, opts));
  const TransportEntry* network = findTransport("inproc");  // network_'s row of the transport registry
  auto deadline = Clock::now() + std::chrono::milliseconds(opts.timeoutMs);
  if (id.kind == RendezvousKind::kInproc) {
    c->inproc_ = true;
    c->network_ = InprocTransport::join(id.secret, rank, nranks);
    c->hostIds_.assign(nranks, hostId());
  } else {
    BootstrapResult boot = joinBootstrap(id, rank, nranks, hostId(), deadline, &c->aborted_);
    for (const auto& p : boot.peers) c->hostIds_.push_back(p.hostId);
    auto tcp = TcpTransport::connect(rank, nranks, boot, id.secret, opts.socketsPerPeer, deadline, &c->aborted_);
    network = &networkTransportNamed(knobs().transport);
    c->mesh_ = tcp.get();
    if (network->create != nullptr) {
      // UCX and ibverbs bring their own same-host paths; the TCP mesh stays open as the liveness channel.
      c->network_ = network->create(NetworkSetup{rank, nranks, tcp.get(), deadline, &c->aborted_, opts.timeoutMs});
      c->control_ = std::move(tcp);
    } else {
      IntraNodeSetup setup{rank,           nranks,    c->hostIds_,  id.secret,
                           opts.timeoutMs, tcp.get(), &c->aborted_, machineRanksOwnCpus(boot, rank)};
      c->network_ = std::move(tcp);
      c->intraNode_ = createIntraNode(setup, opts.algo, [] { return planner::processCostParams().shmAlgorithms; });
    }
  }
  if (c->intraNode_ && c->intraNode_->transport() != nullptr) {
    // Each peer goes to the first transport, in order of preference, that the registry says reaches it.
    std::vector<bool> sameHost(nranks);
    for (int p = 0; p < nranks; ++p) sameHost[p] = p != rank && c->hostIds_[p] == c->hostIds_[rank];
    const std::vector<RouteCandidate> candidates = {{c->intraNode_->transport(), findTransport("shm")},
                                                    {c->network_.get(), network}};
    c->transport_ =
        std::make_unique<RoutedTransport>(std::vector<Transport*>{c->intraNode_->transport(), c->network_.get()},
                                          routePeers(rank, sameHost, candidates, MemoryKind::kHost), sameHost);
  }
  // The cost model, made here rather than on first use: ternQueryAlgorithm may run on another thread than the
  // collectives, and a bad TERN_TUNE_FILE or TERN_TOPO_FILE should fail init. It prices the job topology the ranks
  // just assembled (NIC speeds and kinds, NUMA placement); same-host peers go through shared memory when the routed
  // transport is up, TCP loopback otherwise.
  c->algoOverride_ = AlgoOverride::parse(opts.algo);
  c->job_ = c->assembleJobTopology(deadline);
  c->planner_ = makeCommPlanner(nranks, c->hostIds_, c->intraNode_ && c->intraNode_->transport() != nullptr, c->job_);
  c->devicePlanner_ = makeDevicePlanner(c->job_);
  c->multiHost_ = std::set<std::string>(c->hostIds_.begin(), c->hostIds_.end()).size() > 1;
  c->hostOf_ = hostIndexOf(c->hostIds_);
  // Learn the network unless a tune file already says what it gives (the user's measurement wins).
  if (planner::processCostParams().find(planner::ModelLink::kNetwork) == nullptr) {
    c->learning_ = NetworkLearning(knobs().learnCalls, static_cast<double>(knobs().learnMinBytes));
  }
  c->modelSettled_ = !c->multiHost_ || !c->learning_.enabled();  // one host: no call is timed (learning_.wants)
  int version = TERN_VERSION_CODE;
  TERN_LOG(kInfo, kInit, rank, "tern %d.%d.%d: communicator %s rank %d of %d ready, transport %s", version / 10000,
           version / 100 % 100, version % 100, opts.name.empty() ? "" : opts.name.c_str(), rank, nranks,
           c->transportName());
  return c;
}

void Communicator::allgatherBytes(const void* input, void* output, size_t bytes, Clock::time_point deadline) {
  CollArgs args;
  args.coll = Collective::kAllGather;
  args.count = bytes;
  args.dtype = ternUint8;
  const Schedule schedule = findAlgorithm(Collective::kAllGather, "ring")->build(args, rank_, nranks_, BuildOptions{});
  ExecContext ctx;
  ctx.transport = &active();
  ctx.dtype = ternUint8;
  ctx.nranks = nranks_;
  ctx.rank = rank_;
  ctx.deadline = deadline;
  ctx.abortFlag = &aborted_;
  ctx.what = "topology exchange";
  const ExecBuffers buffers{hostMemory(input, bytes), hostMemory(output, bytes * static_cast<size_t>(nranks_)),
                            hostMemory(scratch(schedule.scratchBytes), schedule.scratchBytes)};
  executeSchedule(schedule, buffers, ctx);
}

std::shared_ptr<const topo::JobTopology> Communicator::assembleJobTopology(Clock::time_point deadline) {
  topo::RankRecord mine;
  mine.hostId = hostIds_[rank_];
  mine.numaOsIndex = topo::boundNumaNode();
  mine.gpuBusId = currentGpuBusId();
  const bool hostLeader = std::find(hostIds_.begin(), hostIds_.end(), hostIds_[rank_]) - hostIds_.begin() == rank_;
  // Only the lowest rank of each host describes it, so only it detects: the others of its host neither pay for
  // detection nor slow it down by detecting beside it. A file is cheap to read, and every rank reads it so that a
  // bad one fails init everywhere with the same message.
  bool cached = false;
  std::shared_ptr<const topo::LocalTopology> local;
  if (hostLeader || inproc_ || !knobs().topoFile.empty()) local = topo::processLocalTopology(knobs().topoFile, &cached);
  if (hostLeader) mine.host = local->host;
  if (rank_ == 0) mine.network = local->network;
  // Every rank decodes every record, its own included, so that all of them assemble the job from the same bytes
  // (and so decide alike).
  std::vector<std::string> wire(static_cast<size_t>(nranks_));
  if (inproc_) {
    // Every rank is a thread of this process: one host, described in rank 0's record. Threads may be pinned
    // differently, and each sees only its own binding: every record says unbound, so that all assemble one job.
    topo::RankRecord first = mine;
    first.numaOsIndex = -1;
    first.host = local->host;
    first.network = local->network;
    topo::RankRecord other = first;
    other.host.reset();
    other.network.reset();
    // Each thread may drive its own GPU (its current device): only those travel.
    constexpr size_t kBusIdBytes = 32;
    std::array<char, kBusIdBytes> busId{};
    mine.gpuBusId.copy(busId.data(), kBusIdBytes - 1);
    std::vector<char> busIds(kBusIdBytes * static_cast<size_t>(nranks_));
    allgatherBytes(busId.data(), busIds.data(), kBusIdBytes, deadline);
    for (int r = 0; r < nranks_; ++r) {
      topo::RankRecord& record = r == 0 ? first : other;
      record.gpuBusId = std::string(&busIds[kBusIdBytes * static_cast<size_t>(r)]);
      wire[r] = topo::encodeRankRecord(record);
    }
  } else {
    const std::string encoded = topo::encodeRankRecord(mine);
    std::vector<uint64_t> lengths(static_cast<size_t>(nranks_));
    const uint64_t length = encoded.size();
    allgatherBytes(&length, lengths.data(), sizeof(length), deadline);
    uint64_t longest = 0;
    for (int r = 0; r < nranks_; ++r) {
      if (lengths[r] == 0 || lengths[r] > topo::kMaxRankRecordBytes) {
        throwError(ternInvalidArgument, "rank %d's topology record: %llu bytes (expected 1 to %zu)", r,
                   static_cast<unsigned long long>(lengths[r]), topo::kMaxRankRecordBytes);
      }
      longest = std::max(longest, lengths[r]);
    }
    std::string padded = encoded;
    padded.resize(longest, ' ');
    std::string all(longest * static_cast<size_t>(nranks_), '\0');
    allgatherBytes(padded.data(), all.data(), longest, deadline);
    for (int r = 0; r < nranks_; ++r) wire[r] = all.substr(static_cast<size_t>(r) * longest, lengths[r]);
  }
  std::vector<topo::RankRecord> records;
  records.reserve(wire.size());
  for (int r = 0; r < nranks_; ++r) records.push_back(topo::decodeRankRecord(wire[r], r));
  // Without any NIC of known kind the peers still talk TCP/IP: price the network as Ethernet.
  auto job = std::make_shared<const topo::JobTopology>(
      topo::assembleJobFromRecords(records, topo::NetKind::kEthernet, &hostIds_));
  const std::string speed = job->network.speedGbps > 0 ? format(" %g Gb/s", job->network.speedGbps) : "";
  const std::string source =
      !local       ? std::string("described by a lower rank")
      : hostLeader ? format("%s, %.1f ms%s", local->source.c_str(), local->seconds * 1e3, cached ? ", cached" : "")
                   : local->source + ", described by a lower rank";
  const int gpuNode = job->ranks[rank_].gpu;
  const std::string gpu = gpuNode >= 0 ? format(", GPU %s", mine.gpuBusId.c_str()) : "";
  TERN_LOG(kInfo, kTopo, rank_, "topology: host %s (%s), NUMA node %d%s; job: %zu hosts, network %s%s",
           hostIds_[rank_].c_str(), source.c_str(), mine.numaOsIndex, gpu.c_str(), job->hosts.size(),
           topo::netKindName(job->network.kind), speed.c_str());
  if (!mine.gpuBusId.empty() && gpuNode < 0) {
    TERN_LOG(kWarn, kTopo, rank_,
             "this rank drives GPU %s, which the topology of host %s (%s) does not list: calls on its device buffers "
             "are priced as a CPU rank's (detection without NVML or sysfs PCI, or a TERN_TOPO_FILE of another host)",
             mine.gpuBusId.c_str(), hostIds_[rank_].c_str(), local ? local->source.c_str() : "a lower rank's");
  }
  // Rank 0 of the first communicator writes what the job saw; later ones (splits) would overwrite it with a part.
  static std::atomic<bool> dumped{false};
  if (rank_ == 0 && !knobs().topoDumpFile.empty() && !dumped.exchange(true)) {
    const std::string path = topo::expandFileName(knobs().topoDumpFile);
    try {
      topo::writeTopologyFile(*job, path);
      TERN_LOG(kInfo, kTopo, rank_, "topology: job written to %s", path.c_str());
    } catch (const Error& e) {
      TERN_LOG(kWarn, kTopo, rank_, "TERN_TOPO_DUMP_FILE: %s", e.what());
    }
  }
  return job;
}

bool Communicator::stopWorker(Clock::time_point deadline) {
  {
    std::unique_lock<std::mutex> lock(queueMutex_);
    if (!queueChanged_.wait_until(lock, deadline, [&] { return queue_.empty() && !busy_; })) return false;
    stopping_ = true;
  }
  queueChanged_.notify_all();
  if (worker_.joinable()) worker_.join();
  return true;
}

Communicator::~Communicator() {
  // Through the C API, release() has already stopped the worker. Other owners (internal tests) get the same
  // deadline, and then a wait rather than a free under a running operation.
  if (!stopWorker(Clock::now() + std::chrono::milliseconds(options_.timeoutMs) + std::chrono::seconds(5))) {
    TERN_LOG(kWarn, kInit, rank_, "communicator destroyed while an operation still runs past TERN_TIMEOUT; waiting");
    stopWorker(Clock::time_point::max());
  }
}

std::shared_ptr<Communicator> Communicator::share(std::unique_ptr<Communicator> comm) {
  return std::shared_ptr<Communicator>(comm.release(), &Communicator::release);
}

void Communicator::release(Communicator* comm) {
  // No API call is inside (each holds a reference); only the worker may still run queued operations. After an
  // abort or a failure they finish at once; otherwise each is bounded by the timeout, so wait one timeout for them.
  const bool failed = comm->failed_.load() || comm->aborted_.load();
  const auto timeout = std::chrono::milliseconds(comm->options_.timeoutMs);
  const auto grace = std::min<std::chrono::milliseconds>(std::chrono::seconds(5), timeout);
  const auto patience = failed ? grace : timeout + grace;
  if (!comm->stopWorker(Clock::now() + patience)) {
    comm->abort(format("rank %d: communicator destroyed while an operation was still running", comm->rank_));
    if (!comm->stopWorker(Clock::now() + grace)) {
      TERN_LOG(kWarn, kInit, comm->rank_,
               "ternCommDestroy: an operation is still running %lld ms after the communicator was destroyed; leaking "
               "the communicator instead of freeing memory in use",
               static_cast<long long>((patience + grace).count()));
      {
        // The worker leaves once the stuck operation returns (the rest fail at once: the communicator is aborted).
        std::lock_guard<std::mutex> lock(comm->queueMutex_);
        comm->stopping_ = true;
      }
      comm->queueChanged_.notify_all();
      if (comm->worker_.joinable()) comm->worker_.detach();
      // Kept reachable, so that leak checkers do not report what is leaked on purpose.
      static std::mutex leakedMutex;
      static auto* leaked = new std::vector<Communicator*>();
      std::lock_guard<std::mutex> lock(leakedMutex);
      leaked->push_back(comm);
      return;
    }
  }
  delete comm;
}

void Communicator::exitCall() {
  // The caller holds a reference, so the decrement and the notify below never touch freed memory. Only abort()
  // waits for the count (it sets aborted_ before it waits, and reads the count under callsMutex_), so taking the
  // lock before notifying is enough for it not to miss the last exit.
  if (activeCalls_.fetch_sub(1) == 1 && aborted_.load()) {
    std::lock_guard<std::mutex> lock(callsMutex_);
    callsChanged_.notify_all();
  }
}

void Communicator::submit(const std::shared_ptr<Operation>& op, bool blocking) {
  std::unique_lock<std::mutex> lock(queueMutex_);
  if (blocking && queue_.empty() && !busy_) {
    busy_ = true;
    lock.unlock();
    Outcome outcome = execute(*op);
    lock.lock();
    busy_ = false;
    lock.unlock();
    queueChanged_.notify_all();
    // Run on the caller's thread, which alone holds the operation (no request handle): no one to notify.
    op->result = outcome.code;
    op->error = std::move(outcome.message);
    op->done = true;
    return;
  }
  queue_.push_back(op);
  if (!worker_.joinable()) worker_ = std::thread(&Communicator::workerLoop, this);
  lock.unlock();
  queueChanged_.notify_all();
  if (blocking) op->waitDone();
}

void Communicator::workerLoop() {
  // Named so that `top -H` and /proc/PID/task show which thread is tern's (15 characters at most).
  pthread_setname_np(pthread_self(), "tern-worker");
  std::unique_lock<std::mutex> lock(queueMutex_);
  for (;;) {
    queueChanged_.wait(lock, [&] { return stopping_ || (!queue_.empty() && !busy_); });
    if (queue_.empty()) {
      if (stopping_) return;
      continue;
    }
    std::shared_ptr<Operation> op = queue_.front();
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    Outcome outcome = execute(*op);
    lock.lock();
    busy_ = false;
    lock.unlock();
    queueChanged_.notify_all();
    op->finish(outcome.code, std::move(outcome.message));
    lock.lock();
  }
}

Communicator::Outcome Communicator::execute(Operation& op) {
  if (failed_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(errorMutex_);
    return {failure_, format("rank %d: communicator failed earlier: %s", rank_, lastError_.c_str())};
  }
  try {
    if (op.gate) waitForGate(op);
    if (auto hook = callHookForTesting.load(std::memory_order_relaxed)) hook(rank_);
    if (op.args.coll == Collective::kPointToPoint) {
      runPointToPoint(op);
    } else {
      runCollective(op);
    }
    return {};
  } catch (const Error& e) {
    if (!isFatal(e.code())) return {e.code(), e.what()};
    return failCall(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return failCall(ternSystemError, format("rank %d: out of memory in %s", rank_, collectiveName(op.args.coll)));
  } catch (const std::exception& e) {
    return failCall(ternInternalError, e.what());
  }
}

// A stream-ordered call runs once its stream has staged the inputs. Waiting on the GPU is local, but a collective
// that never starts here stalls every peer, so the wait has the communicator's deadline like any other, and an
// abort ends it.
void Communicator::waitForGate(Operation& op) {
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(options_.timeoutMs);
  for (;;) {
    const Clock::time_point slice = std::min(deadline, Clock::now() + std::chrono::milliseconds(20));
    if (op.gate->waitOpen(slice)) return;
    if (aborted_.load()) {
      throwError(ternRemoteError, "rank %d: communicator aborted while a stream-ordered %s waited for its stream",
                 rank_, collectiveName(op.args.coll));
    }
    if (Clock::now() >= deadline) {
      throwError(ternTimeout,
                 "rank %d: the stream of a stream-ordered %s did not reach it within TERN_TIMEOUT (%d ms): work "
                 "enqueued on the stream before it has not finished",
                 rank_, collectiveName(op.args.coll), options_.timeoutMs);
    }
  }
}

Communicator::Outcome Communicator::failCall(ternResult_t code, const std::string& message) {
  Outcome outcome{code, fail(code, message)};
  // The caller gets its buffers back next; transfers of the failed call may still be posted.
  active().withdrawAfterFailure();
  return outcome;
}

std::string Communicator::fail(ternResult_t code, const std::string& message) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(errorMutex_);
    first = !failed_;
  }
  std::string report = message;
  if (first && mesh_ != nullptr && !aborted_.load()) {
    const TcpTransport::LossVerdict v = mesh_->investigate(code == ternTimeout, options_.timeoutMs);
    if (v.fromPeer && (message.find(" (detected by rank ") != std::string::npos ||
                       message.find(format("rank %d failed: ", v.detector)) != std::string::npos)) {
      report = message;  // the transport reported the notice itself
      mesh_->announceFailure(v.lost, v.detector, v.detail);
    } else if (v.fromPeer) {
      report = v.lost >= 0 ? format("rank %d: rank %d lost (detected by rank %d): %s; on this rank: %s", rank_, v.lost,
                                    v.detector, v.detail.c_str(), message.c_str())
                           : format("rank %d: rank %d failed: %s; on this rank: %s", rank_, v.detector,
                                    v.detail.c_str(), message.c_str());
      mesh_->announceFailure(v.lost, v.detector, v.detail);  // pass the news on: our neighbours may wait on us
    } else {
      if (v.lost >= 0) {
        report = format("rank %d: rank %d lost (detected by rank %d): %s; %s", rank_, v.lost, rank_, message.c_str(),
                        v.detail.c_str());
      }
      mesh_->announceFailure(v.lost, rank_, message);
    }
  }
  {
    std::lock_guard<std::mutex> lock(errorMutex_);
    if (!failed_) {
      failed_ = true;
      failure_ = code;
      lastError_ = report;
    }
  }
  TERN_LOG(kWarn, kColl, rank_, "%s", report.c_str());
  // Make every peer fail too instead of waiting for its timeout.
  active().abort(report);
  return report;
}

void Communicator::abort(const std::string& reason) {
  aborted_.store(true);
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(errorMutex_);
    if (!failed_) {
      first = true;
      failed_ = true;
      failure_ = ternRemoteError;
      lastError_ = reason;
    }
  }
  // Peers then report this rank's abort rather than a rank whose connections closed without a word.
  if (first && mesh_ != nullptr) mesh_->announceFailure(-1, rank_, reason);
  active().abort(reason);
  abortDeviceEngines();
  // Calls in flight on other threads notice within one poll slice (100 ms); wait a while for them to leave, so that
  // they have usually returned when ternCommAbort does. One still inside afterwards holds its own reference.
  const auto wait =
      std::min<std::chrono::milliseconds>(std::chrono::seconds(5), std::chrono::milliseconds(options_.timeoutMs));
  std::unique_lock<std::mutex> lock(callsMutex_);
  callsChanged_.wait_for(lock, wait, [&] { return activeCalls_.load() == 0; });
}

ternResult_t Communicator::asyncError() {
  {
    std::lock_guard<std::mutex> lock(errorMutex_);
    if (failed_) return failure_;
  }
  if (ternResult_t device = deviceAsyncError(); device != ternSuccess) return device;
  std::lock_guard<std::mutex> lock(queueMutex_);
  return (queue_.empty() && !busy_) ? ternSuccess : ternInProgress;
}

std::string Communicator::lastError() {
  std::lock_guard<std::mutex> lock(errorMutex_);
  return lastError_;
}

ChoiceContext Communicator::choiceContext() {
  // Called on every call that is not in the choice cache (alltoallv, always): nothing here may cost more than a
  // lock and a reference count. The host map only matters without a planner (the defaults' fallback).
  ChoiceContext ctx;
  ctx.nranks = nranks_;
  ctx.rank = rank_;
  ctx.multiHost = multiHost_;
  ctx.planner = currentPlanner();
  if (!ctx.planner) ctx.hostOf = hostOf_;
  return ctx;
}

DirectOption Communicator::directOption(const CollArgs& args) {
  DirectOption direct;
  if (intraNode_) {
    direct.name = intraNode_->algorithmFor(args);
    direct.predictSeconds = [this](const CollArgs& a) { return intraNode_->predictSeconds(a); };
  }
  return direct;
}

namespace {

// AlltoAllv and point-to-point groups are shaped by more than a count: never cached (and never direct).
bool cacheableChoice(const CollArgs& args) {
  return args.sendCounts.empty() && args.recvCounts.empty() && args.p2p.empty();
}

}  // namespace

const Choice* Communicator::cachedChoice(const ChoiceKey& key) {
  if (lastChoice_ != nullptr && lastChoiceKey_ == key) return lastChoice_;  // a loop repeating one call
  auto it = choiceCache_.find(key);
  if (it == choiceCache_.end()) return nullptr;
  lastChoiceKey_ = key;
  lastChoice_ = &it->second;
  return lastChoice_;
}

bool Communicator::runsDirect(const CollArgs& args) {
  if (cacheableChoice(args)) {
    std::lock_guard<std::mutex> lock(choiceMutex_);
    if (const Choice* c = cachedChoice(choiceKey(args))) return c->direct;
  }
  if (args.coll == Collective::kAlltoAllv && algoOverride_.rules.empty()) {
    // Decided by the first call (the shared-memory catalogue takes every valid alltoallv when all ranks share the
    // host), instead of choosing again on every call.
    int direct = alltoallvDirect_.load(std::memory_order_relaxed);
    if (direct < 0) {
      direct = choose(args).direct ? 1 : 0;
      alltoallvDirect_.store(direct, std::memory_order_relaxed);
    }
    return direct == 1;
  }
  return choose(args).direct;
}

Choice Communicator::choose(const CollArgs& args) {
  if (!cacheableChoice(args)) return chooseWithDirect(args, choiceContext(), algoOverride_, directOption(args));
  const ChoiceKey key = choiceKey(args);
  {
    std::lock_guard<std::mutex> lock(choiceMutex_);
    if (const Choice* c = cachedChoice(key)) return *c;
  }
  const ChoiceContext ctx = choiceContext();
  Choice choice = chooseWithDirect(args, ctx, algoOverride_, directOption(args));
  std::scoped_lock lock(plannerMutex_, choiceMutex_);
  // Priced with a model that the network learning replaced meanwhile (a stream-ordered call's vote chooses on the
  // caller's thread): not kept, or this rank's later calls of the shape would run what its peers no longer choose.
  if (planner_ != ctx.planner) return choice;
  if (choiceCache_.size() >= kChoiceCacheEntries) {  // a sweep over many sizes: start over
    choiceCache_.clear();
    lastChoice_ = nullptr;
  }
  choiceCache_.emplace(key, choice);
  return choice;
}

double Communicator::predictSeconds(const CollArgs& args, const Choice& choice) {
  return predictChoiceSeconds(args, choiceContext(), choice, directOption(args));
}

std::string Communicator::algorithmFor(const CollArgs& args) { return choose(args).name; }

std::string Communicator::compressedAlgorithmFor(const CollArgs& args, const std::string& codecSpec, double* seconds) {
  auto codec = compress::makeCodec(codecSpec);  // throws ternInvalidArgument for a bad spec
  const bool hierarchical = compressHierFor(args, *codec);
  const char* name = tern::compressedAlgorithmFor(args.coll, *codec, hierarchical);
  if (name == nullptr || *name == '\0') {
    throwError(ternInvalidArgument, "%s has no compressed form", collectiveName(args.coll));
  }
  *seconds = 0;
  if (const auto planner = currentPlanner()) {
    const double bytes = static_cast<double>(args.count) * static_cast<double>(dataTypeSize(args.dtype));
    const planner::Estimate e = planner->estimateCompressedForm(args.coll, bytes, codec->spec(), hierarchical);
    if (e.error.empty()) *seconds = e.seconds;
  }
  return name;
}

bool Communicator::compressHierFor(const CollArgs& args, const compress::Codec& codec, bool onDevice) {
  if (!compressedHierApplies(args, codec, hostOf_, nranks_)) return false;
  if (knobs().compressHier >= 0) return knobs().compressHier == 1;  // TERN_COMPRESS_HIER forces a form
  const auto devicePlanner = onDevice ? currentDevicePlanner() : nullptr;
  const auto planner = devicePlanner ? devicePlanner : currentPlanner();
  if (!planner) return false;
  // The cost model prices both forms: hier sends fewer bytes between nodes and pays an uncompressed reduce-scatter
  // and allgather inside them, a good trade when the links inside a node are much faster than the network.
  const double bytes = static_cast<double>(args.count) * static_cast<double>(dataTypeSize(args.dtype));
  return planner->estimateCompressed(args.coll, bytes, codec.spec()).algorithm == "compressed_hier";
}

Communicator::ScheduleKey Communicator::scheduleKey(const CollArgs& a, std::string algorithm) {
  return {a.coll,       a.count,      a.dtype,      a.op,        a.root, a.inPlace, std::move(algorithm),
          a.sendCounts, a.sendDispls, a.recvCounts, a.recvDispls};
}

void Communicator::noteAlgorithm(std::string_view name) {
  std::lock_guard<std::mutex> lock(lastAlgorithmMutex_);
  lastAlgorithm_.assign(name);
  lastStaticAlgorithm_.store(nullptr, std::memory_order_release);
}

std::string Communicator::lastAlgorithm() const {
  std::lock_guard<std::mutex> lock(lastAlgorithmMutex_);
  if (const char* name = lastStaticAlgorithm_.load(std::memory_order_acquire)) return name;
  return lastAlgorithm_;
}

std::shared_ptr<const Schedule> Communicator::scheduleFor(const CollArgs& args, std::string* algorithm) {
  // A schedule algorithm: when the direct path won, runCollective tried it first and it declined this call.
  const Choice chosen = choose(args);
  std::string algo = chosen.direct ? chooseAlgorithm(args, choiceContext(), algoOverride_).name : chosen.name;
  if (algorithm != nullptr) *algorithm = algo;
  ScheduleKey key = scheduleKey(args, algo);
  auto it = scheduleCache_.find(key);
  if (it != scheduleCache_.end()) return it->second;
  BuildOptions bo;
  if (knobs().chunkBytes > 0) bo.pipelineChunkBytes = static_cast<size_t>(knobs().chunkBytes);
  bo.hostOf = hostOf_;                                        // ranks with the same host id share a node
  bo.ringOrder = currentPlanner()->buildOptions().ringOrder;  // the order the model priced: ranks of a host adjacent
  const AlgorithmInfo* info = findAlgorithm(args.coll, algo);
  auto schedule = std::make_shared<const Schedule>(info->build(args, rank_, nranks_, bo));
  TERN_LOG(kInfo, kTune, rank_, "%s count %zu %s: algorithm %s (%zu steps, %zu scratch bytes)",
           collectiveName(args.coll), args.count, dataTypeName(args.dtype), algo.c_str(), schedule->steps.size(),
           schedule->scratchBytes);
  if (scheduleCache_.size() > 512) scheduleCache_.clear();
  scheduleCache_.emplace(std::move(key), schedule);
  return schedule;
}

void* Communicator::scratch(size_t bytes) {
  if (bytes > scratchBytes_) {
    size_t rounded = (bytes + 4095) & ~static_cast<size_t>(4095);
    void* p = std::aligned_alloc(4096, rounded);
    if (p == nullptr) throw std::bad_alloc();
    scratch_ = std::unique_ptr<char[], void (*)(void*)>(static_cast<char*>(p), std::free);
    scratchBytes_ = rounded;
  }
  return scratch_.get();
}

Compressor* Communicator::defaultCompressor(const void* key, size_t count, ternDataType_t dtype) {
  std::lock_guard<std::mutex> lock(compressMutex_);
  auto k = std::make_tuple(key, count, static_cast<int>(dtype));
  auto it = defaultCompressors_.find(k);
  if (it != defaultCompressors_.end()) return it->second.get();
  auto c = Compressor::create(options_.compress, nullptr, count, dtype);
  Compressor* raw = c.get();
  defaultCompressors_.emplace(k, std::move(c));
  return raw;
}

bool Communicator::compressionPays(const CollArgs& args, const std::string& codecSpec, bool onDevice) {
  const auto devicePlanner = onDevice ? currentDevicePlanner() : nullptr;
  onDevice = devicePlanner != nullptr;  // no GPU in the job: priced as the host path, as before
  const auto planner = onDevice ? devicePlanner : currentPlanner();
  if (knobs().compressAlways || !planner) return true;
  const auto key = std::make_pair(args.count, static_cast<int>(args.dtype));
  if (!onDevice) {
    std::lock_guard<std::mutex> lock(compressMutex_);
    auto it = compressionPays_.find(key);
    if (it != compressionPays_.end()) return it->second;
  }
  // A bad TERN_COMPRESS is an error (ternInvalidArgument), not silently off.
  const std::unique_ptr<compress::Codec> codec = compress::makeCodec(codecSpec);
  const double bytes = static_cast<double>(args.count) * static_cast<double>(dataTypeSize(args.dtype));
  // The form that would run (TERN_COMPRESS_HIER may force the dearer one).
  const planner::Estimate compressed =
      planner->estimateCompressedForm(args.coll, bytes, codec->spec(), compressHierFor(args, *codec, onDevice));
  const Choice plain = choose(args);
  std::string plainName = plain.name;
  double plainSeconds = predictSeconds(args, plain);
  if (onDevice) {
    // Uncompressed, the call would run on the cheaper device engine.
    const DeviceEngineEstimate best =
        rankDeviceEngines(args, nranks_, *job_, devicePlanner.get(), plain.name, plainSeconds).front();
    plainName = best.engine + " (" + best.algorithm + ")";
    plainSeconds = std::max(best.seconds, 0.0);
  }
  // No prediction for the uncompressed call (0): compress, as asked.
  const bool pays = compressed.error.empty() && (plainSeconds <= 0 || compressed.seconds < plainSeconds);
  TERN_LOG(kInfo, kCompress, rank_, "%s count %zu %s%s: %s with %s %s, uncompressed %s %s: %s",
           collectiveName(args.coll), args.count, dataTypeName(args.dtype), onDevice ? " on device buffers" : "",
           compressed.algorithm.c_str(), codecSpec.c_str(), planner::formatTime(compressed.seconds).c_str(),
           plainName.c_str(), planner::formatTime(plainSeconds).c_str(),
           pays ? "compressing" : "not compressing (it does not pay)");
  if (!onDevice) {
    std::lock_guard<std::mutex> lock(compressMutex_);
    // As in choose: an answer from a model that was replaced meanwhile is not kept (recordTimedCall swaps the model,
    // then clears this table under compressMutex_).
    if (currentPlanner() == planner) compressionPays_.emplace(key, pays);
  }
  return pays;
}

bool Communicator::mayCompressImplicitly(const CollArgs& args) {
  const Knobs& k = knobs();
  if (options_.compress.empty() || (args.op != ternSum && args.op != ternAvg) ||
      !compress::codecInputTypeSupported(args.dtype) ||
      args.count * dataTypeSize(args.dtype) < static_cast<size_t>(k.compressMinBytes) || nranks_ <= 1) {
    return false;
  }
  return true;
}

Compressor* Communicator::implicitCompressor(const CollArgs& args, void* recvbuff) {
  if (!mayCompressImplicitly(args) || !compressionPays(args, options_.compress)) return nullptr;
  return defaultCompressor(recvbuff, args.count, args.dtype);
}

std::shared_ptr<const planner::Planner> Communicator::currentPlanner() const {
  std::lock_guard<std::mutex> lock(plannerMutex_);
  return planner_;
}

std::shared_ptr<const planner::Planner> Communicator::currentDevicePlanner() const {
  std::lock_guard<std::mutex> lock(plannerMutex_);
  return devicePlanner_;
}

void Communicator::recordTimedCall(const CollArgs& args, const std::string& algorithm, double seconds) {
  if (!learning_.record(args, algorithm, seconds)) return;
  // Every rank counts the same calls, so all of them are here, at the same call: agree on the times.
  const std::vector<double>& mine = learning_.times();
  const size_t n = mine.size();
  std::vector<double> all(n * static_cast<size_t>(nranks_));
  allgatherBytes(mine.data(), all.data(), n * sizeof(double),
                 coarseNow() + std::chrono::milliseconds(options_.timeoutMs));
  std::vector<double> agreed(mine);
  for (size_t r = 0; r < static_cast<size_t>(nranks_); ++r) {
    for (size_t i = 0; i < n; ++i) agreed[i] = std::min(agreed[i], all[r * n + i]);
  }
  const auto before = currentPlanner();
  const std::optional<planner::LearnedNetwork> learned = learning_.learn(before->config(), agreed);
  if (!learned) {
    TERN_LOG(kInfo, kTune, rank_, "learned nothing about the network from %zu timed calls; the model stays", n);
    modelSettled_ = true;
    return;
  }
  planner::PlannerConfig config = before->config();
  config.params = planner::withLearnedNetwork(config.params, *learned);
  auto after = std::make_shared<const planner::Planner>(config);
  // Device calls cross the same network: their model learns it too (the device engines' decisions follow through
  // devicePlan's votes).
  std::shared_ptr<const planner::Planner> deviceAfter;
  if (const auto device = currentDevicePlanner()) {
    planner::PlannerConfig deviceConfig = device->config();
    deviceConfig.params = planner::withLearnedNetwork(deviceConfig.params, *learned);
    deviceAfter = std::make_shared<const planner::Planner>(std::move(deviceConfig));
  }
  const planner::LinkCost was = before->links().classCost(planner::ModelLink::kNetwork);
  const planner::LinkCost now = learned->network.cost;
  {
    std::scoped_lock lock(plannerMutex_, choiceMutex_);
    planner_ = after;
    if (deviceAfter) devicePlanner_ = deviceAfter;
    choiceCache_.clear();
    lastChoice_ = nullptr;
  }
  modelSettled_ = true;
  {
    std::lock_guard<std::mutex> lock(compressMutex_);
    compressionPays_.clear();
  }
  TERN_LOG(kInfo, kTune, rank_,
           "network learned from %d timed calls: alpha %s, %.4f GB/s (the model had %s, %.4f GB/s), %s fitted, "
           "prediction error %.1f%%",
           learned->callsUsed, planner::formatTime(now.alpha).c_str(), 1e-9 / now.beta,
           planner::formatTime(was.alpha).c_str(), was.beta > 0 ? 1e-9 / was.beta : 0.0,
           learned->alphaFitted ? "alpha and beta" : "beta", 100 * learned->rmsError);
  if (rank_ == 0 && !knobs().tuneDumpFile.empty()) {
    std::ofstream out(knobs().tuneDumpFile);
    out << planner::calibrationToJson(config.params).dump(2) << "\n";
    if (!out) {
      TERN_LOG(kWarn, kTune, rank_, "TERN_TUNE_DUMP_FILE=%s: cannot write it", knobs().tuneDumpFile.c_str());
    }
  }
}

void Communicator::runCompressed(Operation& op) {
  Compressor& c = *op.compressor;
  ScheduleKey key = scheduleKey(op.args, "compressed/" + c.codec->spec());
  auto it = scheduleCache_.find(key);
  std::shared_ptr<const Schedule> schedule;
  if (it != scheduleCache_.end()) {
    schedule = it->second;
  } else {
    BuildOptions bo;
    bo.codec = c.codec.get();
    if (compressHierFor(op.args, *c.codec)) bo.hostOf = hostOf_;  // buildCompressed: compressed_hier
    schedule = std::make_shared<const Schedule>(buildCompressed(op.args, rank_, nranks_, bo));
    TERN_LOG(kInfo, kCompress, rank_, "%s count %zu: %s with %s", collectiveName(op.args.coll), op.args.count,
             schedule->algorithm.c_str(), c.codec->spec().c_str());
    if (scheduleCache_.size() > 512) scheduleCache_.clear();
    scheduleCache_.emplace(std::move(key), schedule);
  }
  if (op.args.coll == Collective::kAllReduce && c.server.size() != c.count) c.server.resize(c.count);
  noteAlgorithm(schedule->algorithm + " (" + c.codec->spec() + ")");
  ExecContext ctx;
  ctx.transport = &active();
  ctx.dtype = ternFloat32;  // accumulation type of decoded payloads
  ctx.op = op.args.op;
  ctx.nranks = nranks_;
  ctx.rank = rank_;
  ctx.deadline = Clock::now() + std::chrono::milliseconds(options_.timeoutMs);
  ctx.abortFlag = &aborted_;
  ctx.what = collectiveName(op.args.coll);
  ctx.codec = c.codec.get();
  ctx.feedback[0] = &c.worker;
  ctx.feedback[1] = &c.server;
  ctx.seed = c.seed;
  ctx.step = c.step++;
  ctx.inputDtype = op.args.dtype;
  ctx.outputDtype = op.args.dtype;
  executeSchedule(*schedule, buffersOf(op, *schedule), ctx);
}

namespace {

// tern.h takes recvbuff == sendbuff as an in-place reduce-scatter too (MPI_IN_PLACE's layout: the result at the start
// of the buffer), besides NCCL's recvbuff = sendbuff + rank * recvcount. Every algorithm reads peers' blocks of an
// input while writing this rank's block, so only NCCL's form (the output over this rank's own block) is safe to run
// in place; an output anywhere else inside the input would overwrite a block before a peer has read it.
bool reduceScatterOverAPeersBlock(const Operation& op, int rank, int nranks) {
  if (op.args.coll != Collective::kReduceScatter || op.args.count == 0) return false;
  const size_t block = op.args.count * dataTypeSize(op.args.dtype);
  const char* in = static_cast<const char*>(op.input);
  const char* out = static_cast<const char*>(op.output);
  const bool overlaps = out < in + block * static_cast<size_t>(nranks) && in < out + block;
  return overlaps && out != in + block * static_cast<size_t>(rank);
}

}  // namespace

void Communicator::runReduceScatterViaScratch(Operation& op) {
  const size_t bytes = op.args.count * dataTypeSize(op.args.dtype);
  std::unique_ptr<char[]> scratch(new char[bytes]);
  void* const user = op.output;
  if (op.feedbackKey == nullptr) op.feedbackKey = user;  // implicit compression's error feedback stays with it
  op.output = scratch.get();
  try {
    runCollective(op);
  } catch (...) {
    op.output = user;
    throw;
  }
  op.output = user;
  std::memcpy(user, scratch.get(), bytes);
}

void Communicator::runCollective(Operation& op) {
  if (reduceScatterOverAPeersBlock(op, rank_, nranks_)) {
    runReduceScatterViaScratch(op);
    return;
  }
  if (op.compressor == nullptr && op.implicitCompression)
    op.compressor =
        implicitCompressor(op.args, op.feedbackKey != nullptr ? const_cast<void*>(op.feedbackKey) : op.output);
  if (op.compressor != nullptr) {  // compressed calls run their codec even alone (the same bits as with peers)
    runCompressed(op);
    return;
  }
  // One rank: every collective is "output = input" (an average of one value is the value), AlltoAllv of its one
  // block, which may sit anywhere in either buffer.
  if (nranks_ == 1) {
    noteAlgorithm("self");
    if (op.args.coll == Collective::kAlltoAllv) {
      runSelfAlltoAllv(op);
      return;
    }
    const size_t bytes = op.args.count * dataTypeSize(op.args.dtype);
    if (op.args.coll != Collective::kBarrier && bytes > 0 && op.output != nullptr && op.output != op.input) {
      std::memmove(op.output, op.input, bytes);
    }
    return;
  }
  ExecContext ctx;
  ctx.transport = &active();
  ctx.dtype = op.args.dtype;
  ctx.op = op.args.op;
  ctx.nranks = nranks_;
  ctx.rank = rank_;
  ctx.deadline = coarseNow() + std::chrono::milliseconds(options_.timeoutMs);
  ctx.abortFlag = &aborted_;
  ctx.what = collectiveName(op.args.coll);
  if (intraNode_ && runsDirect(op.args)) {
    if (const char* direct = intraNode_->tryRun(op, ctx)) {
      noteStaticAlgorithm(direct);
      return;
    }
  }
  std::string algorithm;
  std::shared_ptr<const Schedule> schedule = scheduleFor(op.args, &algorithm);
  noteAlgorithm(algorithm);
  const ExecBuffers buffers = buffersOf(op, *schedule);
  const bool timed = learning_.wants(op.args, multiHost_);
  const auto start = timed ? Clock::now() : Clock::time_point{};
  executeSchedule(*schedule, buffers, ctx);
  if (timed) recordTimedCall(op.args, algorithm, std::chrono::duration<double>(Clock::now() - start).count());
}

void Communicator::runSelfAlltoAllv(const Operation& op) const {
  const CollArgs& a = op.args;
  if (a.sendCounts[0] != a.recvCounts[0]) {
    throwError(ternInvalidArgument, "alltoallv: rank 0 sends %zu elements to itself but expects %zu", a.sendCounts[0],
               a.recvCounts[0]);
  }
  const size_t size = dataTypeSize(a.dtype);
  const size_t bytes = a.sendCounts[0] * size;
  const char* from = static_cast<const char*>(op.input) + a.sendDispls[0] * size;
  char* to = static_cast<char*>(op.output) + a.recvDispls[0] * size;
  if (bytes > 0 && from != to) std::memmove(to, from, bytes);
}

ExecBuffers Communicator::buffersOf(const Operation& op, const Schedule& schedule) {
  // A buffer the call does not have on this rank (broadcast's input off the root, reduce's output) has no bytes.
  const size_t in = op.input != nullptr ? inputBytes(op.args, nranks_) : 0;
  const size_t out = op.output != nullptr ? outputBytes(op.args, nranks_) : 0;
  return {ConstMemRef{op.input, in, shm::classifyHostMemory(op.input, in)},
          MemRef{op.output, out, shm::classifyHostMemory(op.output, out)},
          hostMemory(scratch(schedule.scratchBytes), schedule.scratchBytes)};
}

void Communicator::runPointToPoint(Operation& op) {
  if (op.recordsAlgorithm) noteStaticAlgorithm("p2p");
  // Sends and receives to/from self pair up in order, by copy; everything else goes to the transport at once, so
  // a group that sends to and receives from the same peer cannot deadlock. Calls run one at a time (submit), so
  // the transfers' states are the communicator's, kept between calls with their capacity.
  std::vector<Transfer>& transfers = p2pTransfers_;
  transfers.assign(op.transfers.size(), Transfer{});
  std::vector<const UserTransfer*>& selfSends = p2pSelfSends_;
  std::vector<const UserTransfer*>& selfRecvs = p2pSelfRecvs_;
  selfSends.clear();
  selfRecvs.clear();
  size_t pending = 0;
  for (size_t i = 0; i < op.transfers.size(); ++i) {
    const UserTransfer& t = op.transfers[i];
    if (t.peer == rank_) {
      (t.isSend ? selfSends : selfRecvs).push_back(&t);
      continue;
    }
    if (t.isSend) {
      active().postSend(t.peer, t.data, t.bytes, &transfers[i]);
    } else {
      active().postRecv(t.peer, t.data, t.bytes, &transfers[i]);
    }
    ++pending;
  }
  if (selfSends.size() != selfRecvs.size()) {
    throwError(ternInvalidUsage, "rank %d: %zu sends to self but %zu receives from self in one group", rank_,
               selfSends.size(), selfRecvs.size());
  }
  for (size_t i = 0; i < selfSends.size(); ++i) {
    if (selfSends[i]->bytes != selfRecvs[i]->bytes) {
      throwError(ternInvalidUsage, "rank %d: send to self of %zu bytes matched a receive of %zu bytes", rank_,
                 selfSends[i]->bytes, selfRecvs[i]->bytes);
    }
    if (selfSends[i]->bytes > 0) std::memmove(selfRecvs[i]->data, selfSends[i]->data, selfSends[i]->bytes);
  }
  // The deadline is set when a first wait of the transport's (up to 100 ms) comes back empty: transfers that complete
  // without one, every small message, read no clock here.
  std::optional<Clock::time_point> deadline;
  while (pending > 0) {
    if (aborted_.load()) throwError(ternRemoteError, "rank %d: send/recv aborted", rank_);
    const int completed = active().progress(100);
    pending -= static_cast<size_t>(completed);
    if (pending == 0 || completed > 0) continue;
    const Clock::time_point now = Clock::now();
    if (!deadline) {
      deadline = now + std::chrono::milliseconds(options_.timeoutMs);
    } else if (now > *deadline) {
      throwError(ternTimeout, "rank %d: send/recv timed out (TERN_TIMEOUT)", rank_);
    }
  }
}

}  // namespace tern
