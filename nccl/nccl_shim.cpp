// libnccl.so.2: NCCL's C ABI on tern's public API, so that a program built for NCCL (PyTorch's libtorch_cuda.so)
// runs on tern when this library is preloaded. Host buffers go through tern's host path and complete before the
// call returns (the stream argument is not used: there is nothing to enqueue on it). Device buffers are refused in
// one place (classifyBuffer) until tern's device path exists. Result, datatype and op values are NCCL's own in
// tern.h, so they pass through unchanged; what tern cannot do returns ncclInvalidUsage with ncclGetLastError
// saying what, never an abort. docs/NCCL.md lists what is mapped, refused or harmless.
#include <nccl.h>

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "buffer_kind.hpp"
#include "nccl_compat.hpp"
#include "tern/tern.h"
#include "tern/tern_ext.h"

#define NCCL_SHIM_API extern "C" __attribute__((visibility("default")))

namespace {

using tern::nccl::BufferKind;
using tern::nccl::classifyBuffer;

// The version this library answers with: torch 2.15 checks for the NCCL it was built against (2.30.7).
constexpr int kReportedVersion = 23007;
constexpr unsigned kConfigMagic = 0xcafebeef;  // NCCL_API_MAGIC of every nccl.h since 2.14

// ncclComm_t is tern's handle itself: tern validates it (null, destroyed, foreign) and reports misuse.
ternComm_t toTern(ncclComm_t c) { return reinterpret_cast<ternComm_t>(c); }
ncclComm_t toNccl(ternComm_t c) { return reinterpret_cast<ncclComm_t>(c); }
ncclResult_t toNccl(ternResult_t r) { return static_cast<ncclResult_t>(r); }

// Errors raised here (rather than inside tern) are kept per thread; ncclGetLastError reports the newer one.
thread_local std::string shimError;
thread_local bool shimErrorIsLatest = false;

ncclResult_t fail(ncclResult_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
ncclResult_t fail(ncclResult_t code, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  shimError = buf;
  shimErrorIsLatest = true;
  return code;
}

// A result from tern: its message is the latest one.
ncclResult_t fromTern(ternResult_t r) {
  if (r != ternSuccess) shimErrorIsLatest = false;
  return toNccl(r);
}

// A built-in or a PreMulSum op (ncclRedOpCreatePreMulSum): the scalar is read at creation (host-immediate).
struct PreMulSum {
  bool live = false;
  ncclDataType_t dtype = ncclFloat32;
  double scalar = 0;        // floating-point types
  long long scalarInt = 0;  // signed integer types
  unsigned long long scalarUint = 0;
};

// Per-communicator state the NCCL ABI needs beyond tern's: kept beside tern's handle, keyed by it.
struct CommState {
  bool nonblocking = false;
  bool finalized = false;
  std::string commName;
  std::vector<PreMulSum> ops;  // op value ncclNumOps + index
};

std::mutex statesMutex;
std::map<ternComm_t, CommState>& states() {
  static auto* m = new std::map<ternComm_t, CommState>();  // never freed: calls may come from exit handlers
  return *m;
}

void addState(ternComm_t c, CommState s) {
  std::lock_guard<std::mutex> lock(statesMutex);
  states()[c] = std::move(s);
}
void dropState(ternComm_t c) {
  std::lock_guard<std::mutex> lock(statesMutex);
  states().erase(c);
}
bool finalized(ternComm_t c) {
  std::lock_guard<std::mutex> lock(statesMutex);
  auto it = states().find(c);
  return it != states().end() && it->second.finalized;
}

// Group depth of this thread (ncclGroupStart/End are per thread, as tern's groups). Scaled copies of PreMulSum
// inputs recorded inside a group must live until the outermost ncclGroupEnd runs them.
thread_local int groupDepth = 0;
thread_local std::vector<std::unique_ptr<char[]>> groupScratch;

size_t typeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

// Datatype check ahead of tern's, to name the NCCL types tern has no kernels for.
ncclResult_t checkType(ncclDataType_t t, const char* fn) {
  if (static_cast<int>(t) == 10 || static_cast<int>(t) == 11) {
    return fail(ncclInvalidArgument, "%s: fp8 datatypes (ncclFloat8e4m3/ncclFloat8e5m2) are not supported by tern", fn);
  }
  if (typeSize(t) == 0) return fail(ncclInvalidArgument, "%s: invalid datatype %d", fn, static_cast<int>(t));
  return ncclSuccess;
}

// The one place that routes by memory kind: host buffers continue to tern's host path.
ncclResult_t checkHost(const void* p, size_t count, size_t elementBytes, const char* fn, const char* what) {
  if (count != 0 && elementBytes != 0 && count > SIZE_MAX / elementBytes) {
    return fail(ncclInvalidArgument, "%s: count %zu overflows the size of %s", fn, count, what);
  }
  if (classifyBuffer(p, count * elementBytes) == BufferKind::kDevice) {
    return fail(ncclInvalidUsage,
                "%s: %s %p is not host memory (a CUDA device buffer?): device buffers need tern's device path (not "
                "built); this libnccl.so.2 runs host buffers only",
                fn, what, p);
  }
  return ncclSuccess;
}

// Rank and size of comm, with tern's messages for bad handles.
ncclResult_t commShape(ncclComm_t comm, int* rank, int* size, const char* fn) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "%s: comm is NULL", fn);
  ternResult_t r = ternCommUserRank(toTern(comm), rank);
  if (r == ternSuccess) r = ternCommCount(toTern(comm), size);
  if (r != ternSuccess) return fromTern(r);
  if (finalized(toTern(comm))) {
    return fail(ncclInvalidUsage, "%s: comm %p was finalized (ncclCommFinalize); only ncclCommDestroy may follow", fn,
                static_cast<void*>(comm));
  }
  return ncclSuccess;
}

#define SHIM_CHECK(expr)                        \
  do {                                          \
    ncclResult_t shim_r_ = (expr);              \
    if (shim_r_ != ncclSuccess) return shim_r_; \
  } while (0)

// ---- PreMulSum: the input is scaled into a scratch copy, then summed by tern ----

template <typename T, typename S>
void scaleInto(const void* in, void* out, size_t count, S scalar) {
  const T* s = static_cast<const T*>(in);
  T* d = static_cast<T*>(out);
  for (size_t i = 0; i < count; ++i) d[i] = static_cast<T>(s[i] * scalar);
}

ncclResult_t scaleHalves(const PreMulSum& op, const void* in, void* out, size_t count, const char* fn) {
  // fp16/bf16: widened to fp32 with tern's own conversion, scaled, rounded back to nearest even.
  std::vector<float> wide(count);
  ternDataType_t t = static_cast<ternDataType_t>(op.dtype);
  if (ternConvert(in, t, wide.data(), ternFloat32, count) != ternSuccess) return fromTern(ternInternalError);
  const float s = static_cast<float>(op.scalar);
  for (float& v : wide) v *= s;
  if (ternConvert(wide.data(), ternFloat32, out, t, count) != ternSuccess) return fromTern(ternInternalError);
  (void)fn;
  return ncclSuccess;
}

// Resolves op for a reduction over dtype on comm: built-in ops pass through; a PreMulSum op returns ncclSum and
// *scaledInput points at the scaled copy of input (count elements), owned by *holder.
ncclResult_t resolveOp(ncclRedOp_t op, ncclDataType_t dtype, const void* input, size_t count, ncclComm_t comm,
                       const char* fn, ternRedOp_t* ternOp, const void** scaledInput, std::unique_ptr<char[]>* holder) {
  *scaledInput = input;
  if (static_cast<int>(op) >= 0 && static_cast<int>(op) < ncclNumOps) {
    *ternOp = static_cast<ternRedOp_t>(op);
    return ncclSuccess;
  }
  PreMulSum pm;
  {
    std::lock_guard<std::mutex> lock(statesMutex);
    auto it = states().find(toTern(comm));
    size_t index = static_cast<size_t>(static_cast<int>(op)) - ncclNumOps;
    if (static_cast<int>(op) < 0 || it == states().end() || index >= it->second.ops.size() ||
        !it->second.ops[index].live) {
      return fail(ncclInvalidArgument, "%s: invalid reduction op %d (not built in, not a live PreMulSum of this comm)",
                  fn, static_cast<int>(op));
    }
    pm = it->second.ops[index];
  }
  if (pm.dtype != dtype) {
    return fail(ncclInvalidArgument, "%s: PreMulSum op %d was created for datatype %d, the call has %d", fn,
                static_cast<int>(op), static_cast<int>(pm.dtype), static_cast<int>(dtype));
  }
  *ternOp = ternSum;
  if (count == 0) return ncclSuccess;
  if (input == nullptr) return ncclSuccess;  // tern reports the NULL buffer
  holder->reset(new (std::nothrow) char[count * typeSize(dtype)]);
  if (!*holder) return fail(ncclSystemError, "%s: out of memory for the PreMulSum input copy", fn);
  void* out = holder->get();
  switch (dtype) {
    case ncclInt8:
      scaleInto<int8_t>(input, out, count, pm.scalarInt);
      break;
    case ncclUint8:
      scaleInto<uint8_t>(input, out, count, pm.scalarUint);
      break;
    case ncclInt32:
      scaleInto<int32_t>(input, out, count, pm.scalarInt);
      break;
    case ncclUint32:
      scaleInto<uint32_t>(input, out, count, pm.scalarUint);
      break;
    case ncclInt64:
      scaleInto<int64_t>(input, out, count, pm.scalarInt);
      break;
    case ncclUint64:
      scaleInto<uint64_t>(input, out, count, pm.scalarUint);
      break;
    case ncclFloat32:
      scaleInto<float>(input, out, count, static_cast<float>(pm.scalar));
      break;
    case ncclFloat64:
      scaleInto<double>(input, out, count, pm.scalar);
      break;
    case ncclFloat16:
    case ncclBfloat16:
      SHIM_CHECK(scaleHalves(pm, input, out, count, fn));
      break;
    default:
      return fail(ncclInvalidArgument, "%s: invalid datatype %d", fn, static_cast<int>(dtype));
  }
  *scaledInput = out;
  return ncclSuccess;
}

// Runs a tern call whose input may be a PreMulSum scratch copy: inside a group the copy lives until GroupEnd.
ncclResult_t runWithScratch(ternResult_t r, std::unique_ptr<char[]> scratch) {
  if (scratch && groupDepth > 0) groupScratch.push_back(std::move(scratch));
  return fromTern(r);
}

// ---- config ----

// ncclConfig_t of nccl.h 2.30 (ncclConfig_v23000). Older headers' structs are prefixes of it (2.28's ends at
// nvlinkCentricSched), so a field is read only when the caller's size covers it.
struct ConfigV23000 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
  int graphUsageMode;
  int numRmaCtx;
  int maxP2pPeers;
  int graphStreamOrdering;
};
// The header this library is compiled against must agree with the layout read here.
static_assert(offsetof(ncclConfig_t, blocking) == offsetof(ConfigV23000, blocking));
static_assert(offsetof(ncclConfig_t, netName) == offsetof(ConfigV23000, netName));
static_assert(offsetof(ncclConfig_t, trafficClass) == offsetof(ConfigV23000, trafficClass));
static_assert(offsetof(ncclConfig_t, commName) == offsetof(ConfigV23000, commName));
static_assert(offsetof(ncclConfig_t, nvlinkCentricSched) == offsetof(ConfigV23000, nvlinkCentricSched));
static_assert(sizeof(ncclConfig_t) <= sizeof(ConfigV23000));

#define CONFIG_HAS(cfg, field) ((cfg)->size >= offsetof(ConfigV23000, field) + sizeof((cfg)->field))

// Translates an NCCL config into tern's plus the shim's state; fields tern cannot honour are refused by name.
ncclResult_t translateConfig(const ncclConfig_t* userConfig, ternConfig_t* out, CommState* state, const char* fn) {
  *out = TERN_CONFIG_INITIALIZER;
  if (userConfig == nullptr) return ncclSuccess;
  const ConfigV23000* c = reinterpret_cast<const ConfigV23000*>(userConfig);
  if (c->magic != kConfigMagic) {
    return fail(ncclInvalidArgument, "%s: config was not set with NCCL_CONFIG_INITIALIZER (magic 0x%x)", fn, c->magic);
  }
  if (c->size < offsetof(ConfigV23000, netName)) {
    return fail(ncclInvalidArgument, "%s: config size %zu is smaller than any nccl.h's ncclConfig_t", fn, c->size);
  }
  if (CONFIG_HAS(c, blocking) && c->blocking != NCCL_CONFIG_UNDEF_INT) {
    if (c->blocking != 0 && c->blocking != 1) {
      return fail(ncclInvalidArgument, "%s: config blocking=%d (must be 0 or 1)", fn, c->blocking);
    }
    // Nonblocking: every call still completes before it returns, and returns ncclSuccess rather than
    // ncclInProgress, which NCCL's nonblocking contract allows for work that is done.
    state->nonblocking = c->blocking == 0;
  }
  if (CONFIG_HAS(c, netName) && c->netName != nullptr) {
    return fail(ncclInvalidUsage,
                "%s: config netName='%s' is not supported: tern picks one network per process (TERN_TRANSPORT, or "
                "NCCL_NET mapped at load); leave netName unset",
                fn, c->netName);
  }
  if (CONFIG_HAS(c, trafficClass) && c->trafficClass != NCCL_CONFIG_UNDEF_INT) {
    return fail(ncclInvalidUsage,
                "%s: config trafficClass=%d is not supported per communicator: set TERN_IB_TC (or NCCL_IB_TC) for "
                "the process",
                fn, c->trafficClass);
  }
  if (CONFIG_HAS(c, commName) && c->commName != nullptr) {
    state->commName = c->commName;
    out->commName = state->commName.c_str();
  }
  // GPU launch shape (CTAs, clusters, channels, NVLS/NVLink scheduling, CUDA-graph modes, RMA contexts), resource
  // sharing of split/shrink and CollNet are hints about device kernels and NCCL's own resources: none exists on
  // the host path, so they change nothing here (docs/NCCL.md). Values outside NCCL's range are still refused.
  struct Hint {
    const char* name;
    bool present;
    int value;
    int min;
  };
  const Hint hints[] = {
      {"cgaClusterSize", CONFIG_HAS(c, cgaClusterSize), CONFIG_HAS(c, cgaClusterSize) ? c->cgaClusterSize : 0, 0},
      {"minCTAs", CONFIG_HAS(c, minCTAs), CONFIG_HAS(c, minCTAs) ? c->minCTAs : 0, 1},
      {"maxCTAs", CONFIG_HAS(c, maxCTAs), CONFIG_HAS(c, maxCTAs) ? c->maxCTAs : 0, 1},
      {"splitShare", CONFIG_HAS(c, splitShare), CONFIG_HAS(c, splitShare) ? c->splitShare : 0, 0},
      {"collnetEnable", CONFIG_HAS(c, collnetEnable), CONFIG_HAS(c, collnetEnable) ? c->collnetEnable : 0, 0},
      {"CTAPolicy", CONFIG_HAS(c, CTAPolicy), CONFIG_HAS(c, CTAPolicy) ? c->CTAPolicy : 0, 0},
      {"shrinkShare", CONFIG_HAS(c, shrinkShare), CONFIG_HAS(c, shrinkShare) ? c->shrinkShare : 0, 0},
      {"nvlsCTAs", CONFIG_HAS(c, nvlsCTAs), CONFIG_HAS(c, nvlsCTAs) ? c->nvlsCTAs : 0, 1},
      {"nChannelsPerNetPeer", CONFIG_HAS(c, nChannelsPerNetPeer),
       CONFIG_HAS(c, nChannelsPerNetPeer) ? c->nChannelsPerNetPeer : 0, 1},
      {"nvlinkCentricSched", CONFIG_HAS(c, nvlinkCentricSched),
       CONFIG_HAS(c, nvlinkCentricSched) ? c->nvlinkCentricSched : 0, 0},
      {"graphUsageMode", CONFIG_HAS(c, graphUsageMode), CONFIG_HAS(c, graphUsageMode) ? c->graphUsageMode : 0, 0},
      {"numRmaCtx", CONFIG_HAS(c, numRmaCtx), CONFIG_HAS(c, numRmaCtx) ? c->numRmaCtx : 0, 0},
      {"maxP2pPeers", CONFIG_HAS(c, maxP2pPeers), CONFIG_HAS(c, maxP2pPeers) ? c->maxP2pPeers : 0, 0},
      {"graphStreamOrdering", CONFIG_HAS(c, graphStreamOrdering),
       CONFIG_HAS(c, graphStreamOrdering) ? c->graphStreamOrdering : 0, 0},
  };
  for (const Hint& h : hints) {
    if (h.present && h.value != NCCL_CONFIG_UNDEF_INT && h.value < h.min) {
      return fail(ncclInvalidArgument, "%s: config %s=%d is out of range (at least %d)", fn, h.name, h.value, h.min);
    }
  }
  return ncclSuccess;
}

ncclResult_t initRank(ncclComm_t* comm, int nranks, const ncclUniqueId& id, int rank, const ncclConfig_t* config,
                      const char* fn) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "%s: comm (the output) is NULL", fn);
  *comm = nullptr;
  if (groupDepth > 0) {
    return fail(ncclInvalidUsage,
                "%s inside ncclGroupStart/End is not supported: tern's init blocks until every rank joins; create "
                "communicators outside groups (or use ncclCommInitAll for several ranks in one process)",
                fn);
  }
  ternConfig_t tc;
  CommState state;
  SHIM_CHECK(translateConfig(config, &tc, &state, fn));
  ternUniqueId tid;
  static_assert(sizeof(tid.internal) == sizeof(id.internal));
  std::memcpy(tid.internal, id.internal, sizeof tid.internal);
  ternComm_t tcomm = nullptr;
  ternResult_t r = ternCommInitRankConfig(&tcomm, nranks, tid, rank, &tc);
  if (r != ternSuccess) return fromTern(r);
  addState(tcomm, std::move(state));
  *comm = toNccl(tcomm);
  return ncclSuccess;
}

// NCCL_* variables mapped onto tern's knobs where tern has one, before tern reads its environment (on first use).
// A TERN_* variable that is set wins. Names with no tern counterpart are reported, not silently dropped.
void mapVariable(const char* from, const char* to) {
  const char* v = std::getenv(from);
  if (v != nullptr && *v != '\0' && std::getenv(to) == nullptr) setenv(to, v, 0);
}

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

void mapDebug() {
  const char* v = std::getenv("NCCL_DEBUG");
  if (v != nullptr && std::getenv("TERN_DEBUG") == nullptr) {
    std::string level = lower(v);
    const char* t = level == "info" ? "INFO" : level == "trace" ? "TRACE" : "WARN";  // VERSION, WARN, ABORT
    setenv("TERN_DEBUG", t, 0);
  }
  const char* subsys = std::getenv("NCCL_DEBUG_SUBSYS");
  if (subsys != nullptr && std::getenv("TERN_DEBUG_SUBSYS") == nullptr) {
    std::string in = subsys, out;
    bool exclude = !in.empty() && in[0] == '^';
    if (exclude) in = in.substr(1);
    static const std::map<std::string, std::string> names = {
        {"init", "INIT"}, {"bootstrap", "INIT"}, {"env", "INIT"}, {"coll", "COLL"},  {"p2p", "COLL"},
        {"call", "COLL"}, {"shm", "SHM"},        {"net", "NET"},  {"graph", "TOPO"}, {"tuning", "TUNE"}};
    size_t pos = 0;
    bool all = false;
    while (pos <= in.size()) {
      size_t comma = in.find(',', pos);
      std::string name = lower(in.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
      if (name == "all") all = true;
      auto it = names.find(name);
      if (it != names.end() && out.find(it->second) == std::string::npos) out += (out.empty() ? "" : ",") + it->second;
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    if (!all && !out.empty()) setenv("TERN_DEBUG_SUBSYS", ((exclude ? "^" : "") + out).c_str(), 0);
  }
}

void mapAlgo() {
  const char* v = std::getenv("NCCL_ALGO");
  if (v == nullptr || *v == '\0' || std::getenv("TERN_ALGO") != nullptr) return;
  // NCCL's syntax ("Ring,Tree", "^NVLS", "allreduce:tree;broadcast:ring") is TERN_ALGO's, case aside; only Ring
  // and Tree have tern counterparts of the same name.
  std::string value = lower(v);
  std::string word;
  for (size_t i = 0; i <= value.size(); ++i) {
    char ch = i < value.size() ? value[i] : ';';
    if (ch == ',' || ch == ';' || ch == '^') {
      if (!word.empty() && word != "ring" && word != "tree") {
        std::fprintf(stderr, "tern: NCCL_ALGO=%s names '%s', which tern has no counterpart for; not applied\n", v,
                     word.c_str());
        return;
      }
      word.clear();
    } else if (ch == ':') {
      word.clear();  // a collective name
    } else {
      word += ch;
    }
  }
  setenv("TERN_ALGO", value.c_str(), 0);
}

void mapNetwork() {
  const char* net = std::getenv("NCCL_NET");
  if (net != nullptr && std::getenv("TERN_TRANSPORT") == nullptr) {
    std::string n = lower(net);
    if (n == "socket") {
      setenv("TERN_TRANSPORT", "tcp", 0);
    } else if (n == "ib") {
      setenv("TERN_TRANSPORT", "ibverbs", 0);
    } else {
      std::fprintf(stderr, "tern: NCCL_NET=%s has no tern counterpart (Socket -> tcp, IB -> ibverbs); not applied\n",
                   net);
    }
  }
  // NCCL opens NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD sockets per peer; tern's knob is the product.
  const char* threads = std::getenv("NCCL_SOCKET_NTHREADS");
  const char* perThread = std::getenv("NCCL_NSOCKS_PERTHREAD");
  if ((threads != nullptr || perThread != nullptr) && std::getenv("TERN_NSOCKS") == nullptr) {
    long t = threads != nullptr ? std::strtol(threads, nullptr, 10) : 1;
    long p = perThread != nullptr ? std::strtol(perThread, nullptr, 10) : 1;
    if (t >= 1 && p >= 1 && t * p <= 64) setenv("TERN_NSOCKS", std::to_string(t * p).c_str(), 0);
  }
}

__attribute__((constructor)) void mapNcclEnvironment() {
  mapDebug();
  mapAlgo();
  mapNetwork();
  mapVariable("NCCL_DEBUG_FILE", "TERN_DEBUG_FILE");
  mapVariable("NCCL_SOCKET_IFNAME", "TERN_SOCKET_IFNAME");
  mapVariable("NCCL_SHM_DISABLE", "TERN_SHM_DISABLE");
  mapVariable("NCCL_TOPO_FILE", "TERN_TOPO_FILE");
  mapVariable("NCCL_IB_HCA", "TERN_IB_HCA");
  mapVariable("NCCL_IB_GID_INDEX", "TERN_IB_GID_INDEX");
  mapVariable("NCCL_IB_TIMEOUT", "TERN_IB_TIMEOUT");
  mapVariable("NCCL_IB_RETRY_CNT", "TERN_IB_RETRY_CNT");
  mapVariable("NCCL_IB_SL", "TERN_IB_SL");
  mapVariable("NCCL_IB_TC", "TERN_IB_TC");
}

ncclResult_t unsupported(const char* fn, const char* why) {
  return fail(ncclInvalidUsage, "%s is not supported by tern's libnccl.so.2: %s", fn, why);
}

constexpr const char* kDeviceOnly = "it needs GPU memory and tern's device path, which is not built";

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// Library information and errors
// ---------------------------------------------------------------------------------------------------------------

NCCL_SHIM_API ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = kReportedVersion;
  return ncclSuccess;
}

NCCL_SHIM_API const char* ncclGetErrorString(ncclResult_t result) {
  switch (static_cast<int>(result)) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the tern developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    case 8:
      return "operation timed out";  // ncclTimeout (nccl.h >= 2.29)
    default:
      return "unknown result code";
  }
}

NCCL_SHIM_API const char* ncclGetLastError(ncclComm_t comm) {
  if (shimErrorIsLatest) return shimError.c_str();
  return ternGetLastError(toTern(comm));
}

NCCL_SHIM_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (asyncError == nullptr) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
  ternResult_t a = ternSuccess;
  ternResult_t r = ternCommGetAsyncError(toTern(comm), &a);
  if (r != ternSuccess) return fromTern(r);
  *asyncError = toNccl(a);
  return ncclSuccess;
}

// ---------------------------------------------------------------------------------------------------------------
// Communicators
// ---------------------------------------------------------------------------------------------------------------

NCCL_SHIM_API ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (uniqueId == nullptr) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  ternUniqueId id;
  ternResult_t r = ternGetUniqueId(&id);
  if (r != ternSuccess) return fromTern(r);
  std::memcpy(uniqueId->internal, id.internal, sizeof uniqueId->internal);
  return ncclSuccess;
}

NCCL_SHIM_API ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return initRank(comm, nranks, commId, rank, nullptr, "ncclCommInitRank");
}

NCCL_SHIM_API ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                                  ncclConfig_t* config) {
  return initRank(comm, nranks, commId, rank, config, "ncclCommInitRankConfig");
}

// Several ids speed up NCCL's bootstrap; tern's has one root, the first id's (the same on every rank).
NCCL_SHIM_API ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                                    ncclUniqueId* commIds, ncclConfig_t* config) {
  if (nId < 1 || commIds == nullptr) {
    return fail(ncclInvalidArgument, "ncclCommInitRankScalable: nId %d / commIds %p: at least one id is needed", nId,
                static_cast<void*>(commIds));
  }
  return initRank(newcomm, nranks, commIds[0], myrank, config, "ncclCommInitRankScalable");
}

// One process, ndev ranks: each rank is created on its own thread (tern's init blocks until all have joined); the
// caller then drives them from one thread inside ncclGroupStart/End, as with NCCL. devlist names CUDA devices,
// which the host path does not use: any list of ndev entries is accepted.
NCCL_SHIM_API ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  const char* fn = "ncclCommInitAll";
  (void)devlist;
  if (comms == nullptr) return fail(ncclInvalidArgument, "%s: comm is NULL", fn);
  if (ndev < 1) return fail(ncclInvalidArgument, "%s: ndev %d must be at least 1", fn, ndev);
  if (groupDepth > 0) return fail(ncclInvalidUsage, "%s inside ncclGroupStart/End is not supported", fn);
  ncclUniqueId id;
  SHIM_CHECK(ncclGetUniqueId(&id));
  std::vector<ncclComm_t> made(ndev, nullptr);
  std::vector<ncclResult_t> results(ndev, ncclSuccess);
  std::vector<std::string> errors(ndev);
  std::vector<std::thread> threads;
  for (int r = 0; r < ndev; ++r) {
    threads.emplace_back([&, r] {
      results[r] = initRank(&made[r], ndev, id, r, nullptr, fn);
      if (results[r] != ncclSuccess) errors[r] = ncclGetLastError(nullptr);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < ndev; ++r) {
    if (results[r] == ncclSuccess) continue;
    for (ncclComm_t c : made) {
      if (c != nullptr) {
        dropState(toTern(c));
        ternCommAbort(toTern(c));
      }
    }
    return fail(results[r], "%s: rank %d of %d: %s", fn, r, ndev, errors[r].c_str());
  }
  for (int r = 0; r < ndev; ++r) comms[r] = made[r];
  return ncclSuccess;
}

NCCL_SHIM_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                         ncclConfig_t* config) {
  const char* fn = "ncclCommSplit";
  if (newcomm == nullptr) return fail(ncclInvalidArgument, "%s: newcomm is NULL", fn);
  *newcomm = nullptr;
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    return fail(ncclInvalidArgument, "%s: color %d (must be >= 0 or NCCL_SPLIT_NOCOLOR)", fn, color);
  }
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  CommState state;
  ternConfig_t tc = TERN_CONFIG_INITIALIZER;
  if (config != nullptr) {
    SHIM_CHECK(translateConfig(config, &tc, &state, fn));
  } else {
    // NULL: the new communicator inherits the parent's configuration.
    std::lock_guard<std::mutex> lock(statesMutex);
    auto it = states().find(toTern(comm));
    if (it != states().end()) {
      state.nonblocking = it->second.nonblocking;
      state.commName = it->second.commName;
    }
    if (!state.commName.empty()) tc.commName = state.commName.c_str();
  }
  ternComm_t out = nullptr;
  ternResult_t r = ternCommSplit(toTern(comm), color == NCCL_SPLIT_NOCOLOR ? -1 : color, key, &out, &tc);
  if (r != ternSuccess) return fromTern(r);
  if (out != nullptr) addState(out, std::move(state));
  *newcomm = toNccl(out);
  return ncclSuccess;
}

// Host calls complete before returning, so nothing is left to flush: the communicator only stops accepting work.
NCCL_SHIM_API ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, "ncclCommFinalize"));
  std::lock_guard<std::mutex> lock(statesMutex);
  states()[toTern(comm)].finalized = true;
  return ncclSuccess;
}

NCCL_SHIM_API ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "ncclCommDestroy: comm is NULL");
  ternResult_t r = ternCommDestroy(toTern(comm));
  if (r == ternSuccess) dropState(toTern(comm));
  return fromTern(r);
}

// Safe from any thread while another is inside a call on comm (tern's abort wakes every wait).
NCCL_SHIM_API ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "ncclCommAbort: comm is NULL");
  ternResult_t r = ternCommAbort(toTern(comm));
  if (r == ternSuccess) dropState(toTern(comm));
  return fromTern(r);
}

NCCL_SHIM_API ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (count == nullptr) return fail(ncclInvalidArgument, "ncclCommCount: count is NULL");
  return fromTern(ternCommCount(toTern(comm), count));
}

NCCL_SHIM_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (rank == nullptr) return fail(ncclInvalidArgument, "ncclCommUserRank: rank is NULL");
  return fromTern(ternCommUserRank(toTern(comm), rank));
}

NCCL_SHIM_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  (void)comm;
  (void)device;
  return unsupported("ncclCommCuDevice", "a host-memory communicator has no CUDA device");
}

// Host memory from tern's allocator (shared-memory backed: same-host peers read it in place).
NCCL_SHIM_API ncclResult_t ncclMemAlloc(void** ptr, size_t size) { return fromTern(ternMemAlloc(ptr, size)); }
NCCL_SHIM_API ncclResult_t ncclMemFree(void* ptr) { return fromTern(ternMemFree(ptr)); }

// Registration is an optimisation hint; host buffers need none (tern copies or maps them per call).
NCCL_SHIM_API ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  const char* fn = "ncclCommRegister";
  int rank = 0, n = 0;
  SHIM_CHECK(commShape(comm, &rank, &n, fn));
  if (handle == nullptr) return fail(ncclInvalidArgument, "%s: handle is NULL", fn);
  SHIM_CHECK(checkHost(buff, size, 1, fn, "buff"));
  *handle = new (std::nothrow) char[1];
  return *handle != nullptr ? ncclSuccess : fail(ncclSystemError, "%s: out of memory", fn);
}

NCCL_SHIM_API ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  const char* fn = "ncclCommDeregister";
  int rank = 0, n = 0;
  SHIM_CHECK(commShape(comm, &rank, &n, fn));
  if (handle == nullptr) return fail(ncclInvalidArgument, "%s: handle is NULL", fn);
  delete[] static_cast<char*>(handle);
  return ncclSuccess;
}

// No GPU memory is allocated by a host communicator: every statistic is zero (not suspended).
NCCL_SHIM_API ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value) {
  const char* fn = "ncclCommMemStats";
  int rank = 0, n = 0;
  SHIM_CHECK(commShape(comm, &rank, &n, fn));
  if (value == nullptr) return fail(ncclInvalidArgument, "%s: value is NULL", fn);
  if (static_cast<int>(stat) < 0 || static_cast<int>(stat) > 3) {
    return fail(ncclInvalidArgument, "%s: unknown statistic %d", fn, static_cast<int>(stat));
  }
  *value = 0;
  return ncclSuccess;
}

// ---- what tern cannot do: exported so that programs load, refused with a reason ----

NCCL_SHIM_API ncclResult_t ncclCommRevoke(ncclComm_t, int) {
  return unsupported("ncclCommRevoke", "use ncclCommAbort (tern aborts, it does not revoke and reuse)");
}
NCCL_SHIM_API ncclResult_t ncclCommShrink(ncclComm_t, int*, int, ncclComm_t* newcomm, ncclConfig_t*, int) {
  if (newcomm != nullptr) *newcomm = nullptr;
  return unsupported("ncclCommShrink",
                     "tern cannot rebuild a communicator without its excluded ranks; create a new "
                     "one (ncclCommInitRank) or split one whose ranks all call (ncclCommSplit)");
}
NCCL_SHIM_API ncclResult_t ncclCommGetUniqueId(ncclComm_t, ncclUniqueId*) {
  return unsupported("ncclCommGetUniqueId", "growing communicators (ncclCommGrow) is not implemented");
}
NCCL_SHIM_API ncclResult_t ncclCommGrow(ncclComm_t, int, const ncclUniqueId*, int, ncclComm_t* newcomm, ncclConfig_t*) {
  if (newcomm != nullptr) *newcomm = nullptr;
  return unsupported("ncclCommGrow", "growing communicators is not implemented");
}
NCCL_SHIM_API ncclResult_t ncclCommSuspend(ncclComm_t, int) {
  return unsupported("ncclCommSuspend", "there is no GPU memory to release");
}
NCCL_SHIM_API ncclResult_t ncclCommResume(ncclComm_t) {
  return unsupported("ncclCommResume", "communicators are never suspended");
}
NCCL_SHIM_API ncclResult_t ncclCommWindowRegister(ncclComm_t, void*, size_t, ncclWindow_t* win, int) {
  if (win != nullptr) *win = nullptr;
  return unsupported("ncclCommWindowRegister", kDeviceOnly);
}
NCCL_SHIM_API ncclResult_t ncclCommWindowDeregister(ncclComm_t, ncclWindow_t) {
  return unsupported("ncclCommWindowDeregister", kDeviceOnly);
}
NCCL_SHIM_API ncclResult_t ncclWinGetUserPtr(ncclComm_t, ncclWindow_t, void** outUserPtr) {
  if (outUserPtr != nullptr) *outUserPtr = nullptr;
  return unsupported("ncclWinGetUserPtr", kDeviceOnly);
}
NCCL_SHIM_API ncclResult_t ncclPutSignal(const void*, size_t, ncclDataType_t, int, ncclWindow_t, size_t, int, int,
                                         unsigned int, ncclComm_t, cudaStream_t) {
  return unsupported("ncclPutSignal", kDeviceOnly);
}
NCCL_SHIM_API ncclResult_t ncclSignal(int, int, int, unsigned int, ncclComm_t, cudaStream_t) {
  return unsupported("ncclSignal", kDeviceOnly);
}
NCCL_SHIM_API ncclResult_t ncclWaitSignal(int, ncclWaitSignalDesc_t*, ncclComm_t, cudaStream_t) {
  return unsupported("ncclWaitSignal", kDeviceOnly);
}
NCCL_SHIM_API ncclResult_t ncclDevCommCreate(ncclComm_t, const ncclDevCommRequirements*, ncclDevComm* outDevComm) {
  (void)outDevComm;
  return unsupported("ncclDevCommCreate", kDeviceOnly);
}
NCCL_SHIM_API ncclResult_t ncclDevCommDestroy(ncclComm_t, const ncclDevComm*) {
  return unsupported("ncclDevCommDestroy", kDeviceOnly);
}
NCCL_SHIM_API ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t, size_t, void** outPtr) {
  if (outPtr != nullptr) *outPtr = nullptr;
  return unsupported("ncclGetLsaMultimemDevicePointer", kDeviceOnly);
}
NCCL_SHIM_API ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t, size_t, int, void** outPtr) {
  if (outPtr != nullptr) *outPtr = nullptr;
  return unsupported("ncclGetPeerDevicePointer", kDeviceOnly);
}
NCCL_SHIM_API ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t*) {
  return unsupported("ncclGroupSimulateEnd",
                     "tern's cost model is queried through ternQueryAlgorithm; the recorded group stays open");
}

// ---------------------------------------------------------------------------------------------------------------
// Reduction operators
// ---------------------------------------------------------------------------------------------------------------

NCCL_SHIM_API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                                    ncclScalarResidence_t residence, ncclComm_t comm) {
  const char* fn = "ncclRedOpCreatePreMulSum";
  if (op == nullptr || scalar == nullptr) return fail(ncclInvalidArgument, "%s: op or scalar is NULL", fn);
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  if (residence != ncclScalarHostImmediate) {
    return fail(ncclInvalidUsage,
                "%s: a device-resident scalar (ncclScalarDevice) needs tern's device path (not built); pass the "
                "scalar in host memory with ncclScalarHostImmediate",
                fn);
  }
  SHIM_CHECK(checkHost(scalar, 1, typeSize(datatype), fn, "scalar"));
  PreMulSum pm;
  pm.live = true;
  pm.dtype = datatype;
  switch (datatype) {
    case ncclInt8:
      pm.scalarInt = *static_cast<const int8_t*>(scalar);
      break;
    case ncclUint8:
      pm.scalarUint = *static_cast<const uint8_t*>(scalar);
      break;
    case ncclInt32:
      pm.scalarInt = *static_cast<const int32_t*>(scalar);
      break;
    case ncclUint32:
      pm.scalarUint = *static_cast<const uint32_t*>(scalar);
      break;
    case ncclInt64:
      pm.scalarInt = *static_cast<const int64_t*>(scalar);
      break;
    case ncclUint64:
      pm.scalarUint = *static_cast<const uint64_t*>(scalar);
      break;
    case ncclFloat32:
      pm.scalar = *static_cast<const float*>(scalar);
      break;
    case ncclFloat64:
      pm.scalar = *static_cast<const double*>(scalar);
      break;
    default: {  // fp16/bf16: the scalar has the call's type
      float f = 0;
      if (ternConvert(scalar, static_cast<ternDataType_t>(datatype), &f, ternFloat32, 1) != ternSuccess) {
        return fromTern(ternInternalError);
      }
      pm.scalar = f;
    }
  }
  std::lock_guard<std::mutex> lock(statesMutex);
  std::vector<PreMulSum>& ops = states()[toTern(comm)].ops;
  size_t index = 0;
  while (index < ops.size() && ops[index].live) ++index;
  if (index == ops.size())
    ops.push_back(pm);
  else
    ops[index] = pm;
  *op = static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(index));
  return ncclSuccess;
}

NCCL_SHIM_API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  const char* fn = "ncclRedOpDestroy";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  std::lock_guard<std::mutex> lock(statesMutex);
  std::vector<PreMulSum>& ops = states()[toTern(comm)].ops;
  int index = static_cast<int>(op) - ncclNumOps;
  if (index < 0 || static_cast<size_t>(index) >= ops.size() || !ops[index].live) {
    return fail(ncclInvalidArgument, "%s: op %d is not a live operator created on this comm", fn, static_cast<int>(op));
  }
  ops[index].live = false;
  return ncclSuccess;
}

// ---------------------------------------------------------------------------------------------------------------
// Collectives (host buffers; complete before returning; stream unused)
// ---------------------------------------------------------------------------------------------------------------

NCCL_SHIM_API ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                         ncclRedOp_t op, ncclComm_t comm, cudaStream_t) {
  const char* fn = "ncclAllReduce";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  SHIM_CHECK(checkHost(sendbuff, count, typeSize(datatype), fn, "sendbuff"));
  SHIM_CHECK(checkHost(recvbuff, count, typeSize(datatype), fn, "recvbuff"));
  ternRedOp_t top;
  const void* input = nullptr;
  std::unique_ptr<char[]> scratch;
  SHIM_CHECK(resolveOp(op, datatype, sendbuff, count, comm, fn, &top, &input, &scratch));
  return runWithScratch(ternAllReduce(input, recvbuff, count, static_cast<ternDataType_t>(datatype), top, toTern(comm)),
                        std::move(scratch));
}

NCCL_SHIM_API ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                      ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t) {
  const char* fn = "ncclReduce";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  if (root < 0 || root >= size) return fail(ncclInvalidArgument, "%s: root %d out of range [0, %d)", fn, root, size);
  SHIM_CHECK(checkHost(sendbuff, count, typeSize(datatype), fn, "sendbuff"));
  if (rank == root) SHIM_CHECK(checkHost(recvbuff, count, typeSize(datatype), fn, "recvbuff"));
  ternRedOp_t top;
  const void* input = nullptr;
  std::unique_ptr<char[]> scratch;
  SHIM_CHECK(resolveOp(op, datatype, sendbuff, count, comm, fn, &top, &input, &scratch));
  return runWithScratch(
      ternReduce(input, recvbuff, count, static_cast<ternDataType_t>(datatype), top, root, toTern(comm)),
      std::move(scratch));
}

NCCL_SHIM_API ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                             ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t) {
  const char* fn = "ncclReduceScatter";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  if (recvcount > SIZE_MAX / static_cast<size_t>(size)) {
    return fail(ncclInvalidArgument, "%s: recvcount %zu overflows the size of sendbuff", fn, recvcount);
  }
  const size_t sendcount = recvcount * static_cast<size_t>(size);
  SHIM_CHECK(checkHost(sendbuff, sendcount, typeSize(datatype), fn, "sendbuff"));
  SHIM_CHECK(checkHost(recvbuff, recvcount, typeSize(datatype), fn, "recvbuff"));
  ternRedOp_t top;
  const void* input = nullptr;
  std::unique_ptr<char[]> scratch;
  SHIM_CHECK(resolveOp(op, datatype, sendbuff, sendcount, comm, fn, &top, &input, &scratch));
  return runWithScratch(
      ternReduceScatter(input, recvbuff, recvcount, static_cast<ternDataType_t>(datatype), top, toTern(comm)),
      std::move(scratch));
}

NCCL_SHIM_API ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t) {
  const char* fn = "ncclAllGather";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  if (sendcount > SIZE_MAX / static_cast<size_t>(size)) {
    return fail(ncclInvalidArgument, "%s: sendcount %zu overflows the size of recvbuff", fn, sendcount);
  }
  SHIM_CHECK(checkHost(sendbuff, sendcount, typeSize(datatype), fn, "sendbuff"));
  SHIM_CHECK(checkHost(recvbuff, sendcount * size, typeSize(datatype), fn, "recvbuff"));
  return fromTern(ternAllGather(sendbuff, recvbuff, sendcount, static_cast<ternDataType_t>(datatype), toTern(comm)));
}

NCCL_SHIM_API ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                         int root, ncclComm_t comm, cudaStream_t) {
  const char* fn = "ncclBroadcast";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  if (root < 0 || root >= size) return fail(ncclInvalidArgument, "%s: root %d out of range [0, %d)", fn, root, size);
  if (rank == root) SHIM_CHECK(checkHost(sendbuff, count, typeSize(datatype), fn, "sendbuff"));
  SHIM_CHECK(checkHost(recvbuff, count, typeSize(datatype), fn, "recvbuff"));
  return fromTern(ternBroadcast(sendbuff, recvbuff, count, static_cast<ternDataType_t>(datatype), root, toTern(comm)));
}

NCCL_SHIM_API ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                     cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

NCCL_SHIM_API ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                        ncclComm_t comm, cudaStream_t) {
  const char* fn = "ncclAlltoAll";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  if (count > SIZE_MAX / static_cast<size_t>(size)) {
    return fail(ncclInvalidArgument, "%s: count %zu overflows the size of the buffers", fn, count);
  }
  SHIM_CHECK(checkHost(sendbuff, count * size, typeSize(datatype), fn, "sendbuff"));
  SHIM_CHECK(checkHost(recvbuff, count * size, typeSize(datatype), fn, "recvbuff"));
  return fromTern(ternAlltoAll(sendbuff, recvbuff, count, static_cast<ternDataType_t>(datatype), toTern(comm)));
}

NCCL_SHIM_API ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                    ncclComm_t comm, cudaStream_t) {
  const char* fn = "ncclSend";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  SHIM_CHECK(checkHost(sendbuff, count, typeSize(datatype), fn, "sendbuff"));
  return fromTern(ternSend(sendbuff, count, static_cast<ternDataType_t>(datatype), peer, toTern(comm)));
}

NCCL_SHIM_API ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                    cudaStream_t) {
  const char* fn = "ncclRecv";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  SHIM_CHECK(checkHost(recvbuff, count, typeSize(datatype), fn, "recvbuff"));
  return fromTern(ternRecv(recvbuff, count, static_cast<ternDataType_t>(datatype), peer, toTern(comm)));
}

// Gather and Scatter are point-to-point groups: root receives (sends) one block per rank, its own block included
// as a send to itself, which tern turns into a local copy in issue order. In place, root's own block stays.
NCCL_SHIM_API ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                      int root, ncclComm_t comm, cudaStream_t) {
  const char* fn = "ncclGather";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  if (root < 0 || root >= size) return fail(ncclInvalidArgument, "%s: root %d out of range [0, %d)", fn, root, size);
  if (count > SIZE_MAX / static_cast<size_t>(size) / typeSize(datatype)) {
    return fail(ncclInvalidArgument, "%s: count %zu overflows the size of recvbuff", fn, count);
  }
  const size_t block = count * typeSize(datatype);
  SHIM_CHECK(checkHost(sendbuff, count, typeSize(datatype), fn, "sendbuff"));
  if (rank == root) SHIM_CHECK(checkHost(recvbuff, count * size, typeSize(datatype), fn, "recvbuff"));
  const ternDataType_t t = static_cast<ternDataType_t>(datatype);
  const ternComm_t c = toTern(comm);
  if (ternGroupStart() != ternSuccess) return fromTern(ternInternalError);
  ternResult_t r = ternSuccess;
  if (rank == root) {
    char* out = static_cast<char*>(recvbuff);
    const bool inPlace = sendbuff == out + static_cast<size_t>(root) * block;
    for (int p = 0; p < size && r == ternSuccess; ++p) {
      if (p == root && inPlace) continue;
      if (p == root) r = ternSend(sendbuff, count, t, root, c);
      if (r == ternSuccess) r = ternRecv(out + static_cast<size_t>(p) * block, count, t, p, c);
    }
  } else {
    r = ternSend(sendbuff, count, t, root, c);
  }
  ternResult_t end = ternGroupEnd();
  return fromTern(r != ternSuccess ? r : end);
}

NCCL_SHIM_API ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                       int root, ncclComm_t comm, cudaStream_t) {
  const char* fn = "ncclScatter";
  int rank = 0, size = 0;
  SHIM_CHECK(commShape(comm, &rank, &size, fn));
  SHIM_CHECK(checkType(datatype, fn));
  if (root < 0 || root >= size) return fail(ncclInvalidArgument, "%s: root %d out of range [0, %d)", fn, root, size);
  if (count > SIZE_MAX / static_cast<size_t>(size) / typeSize(datatype)) {
    return fail(ncclInvalidArgument, "%s: count %zu overflows the size of sendbuff", fn, count);
  }
  const size_t block = count * typeSize(datatype);
  if (rank == root) SHIM_CHECK(checkHost(sendbuff, count * size, typeSize(datatype), fn, "sendbuff"));
  SHIM_CHECK(checkHost(recvbuff, count, typeSize(datatype), fn, "recvbuff"));
  const ternDataType_t t = static_cast<ternDataType_t>(datatype);
  const ternComm_t c = toTern(comm);
  if (ternGroupStart() != ternSuccess) return fromTern(ternInternalError);
  ternResult_t r = ternSuccess;
  if (rank == root) {
    const char* in = static_cast<const char*>(sendbuff);
    const bool inPlace = recvbuff == in + static_cast<size_t>(root) * block;
    for (int p = 0; p < size && r == ternSuccess; ++p) {
      if (p == root && inPlace) continue;
      r = ternSend(in + static_cast<size_t>(p) * block, count, t, p, c);
      if (r == ternSuccess && p == root) r = ternRecv(recvbuff, count, t, root, c);
    }
  } else {
    r = ternRecv(recvbuff, count, t, root, c);
  }
  ternResult_t end = ternGroupEnd();
  return fromTern(r != ternSuccess ? r : end);
}

// ---------------------------------------------------------------------------------------------------------------
// Groups: tern's groups (per thread, nesting; the outermost End runs every recorded call, several communicators
// together)
// ---------------------------------------------------------------------------------------------------------------

NCCL_SHIM_API ncclResult_t ncclGroupStart() {
  ++groupDepth;
  return fromTern(ternGroupStart());
}

NCCL_SHIM_API ncclResult_t ncclGroupEnd() {
  if (groupDepth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  ternResult_t r = ternGroupEnd();
  if (--groupDepth == 0) groupScratch.clear();
  return fromTern(r);
}
