#include "base/env.hpp"

#include <strings.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/error.hpp"

namespace tern {

namespace {

constexpr long long kMaxBytes = 1LL << 50;
constexpr long long kMaxRanks = 1LL << 24;

// Each takes what applies when the knob is unset (KnobSpec::byDefault) and the line that says what it is.
KnobSpec text(const char* name, const char* byDefault, const char* meaning) {
  return {name, KnobKind::kString, 0, 0, false, meaning, false, byDefault};
}
KnobSpec flag(const char* name, const char* byDefault, const char* meaning) {
  return {name, KnobKind::kFlag, 0, 1, false, meaning, false, byDefault};
}
KnobSpec integer(const char* name, long long min, long long max, const char* byDefault, const char* meaning) {
  return {name, KnobKind::kInt, min, max, false, meaning, false, byDefault};
}
KnobSpec bytes(const char* name, long long min, long long max, bool zeroAllowed, const char* byDefault,
               const char* meaning) {
  return {name, KnobKind::kBytes, min, max, zeroAllowed, meaning, false, byDefault};
}
KnobSpec decimal(const char* name, long long max, const char* byDefault, const char* meaning) {
  return {name, KnobKind::kDecimal, 0, max, false, meaning, false, byDefault};
}
// Checked where it is read (KnobSpec::checkedWhereRead).
KnobSpec launch(KnobSpec spec) {
  spec.checkedWhereRead = true;
  return spec;
}
KnobSpec ib(KnobSpec spec) {
  spec.checkedWhereRead = true;
  return spec;
}

bool integral(const KnobSpec& k) { return k.kind == KnobKind::kInt || k.kind == KnobKind::kBytes; }
bool numeric(const KnobSpec& k) { return integral(k) || k.kind == KnobKind::kDecimal; }

std::optional<std::string> processLookup(const char* name) {
  const std::string full = std::string("TERN_") + name;
  const char* v = std::getenv(full.c_str());
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

// 1: true, 0: false, -1: not a flag word.
int flagValue(const std::string& v) {
  for (const char* t : {"1", "true", "yes", "on"}) {
    if (strcasecmp(v.c_str(), t) == 0) return 1;
  }
  for (const char* f : {"0", "false", "no", "off"}) {
    if (strcasecmp(v.c_str(), f) == 0) return 0;
  }
  return -1;
}

const KnobSpec& declared(const char* name) {
  const KnobSpec* spec = findKnob(name);
  if (spec == nullptr) {
    throwError(ternInternalError, "TERN_%s is read but not declared in the knobs table (src/base/env.cpp)", name);
  }
  return *spec;
}

}  // namespace

const std::vector<KnobSpec>& knobTable() {
  // TERN_TIMEOUT's upper bound: waits keep it in milliseconds as an int.
  static const std::vector<KnobSpec> table = {
      text("DEBUG", "warnings only", "log level: WARN, INFO, TRACE"),
      text("DEBUG_SUBSYS", "all", "comma list of subsystems to log, ^ excludes"),
      text("DEBUG_FILE", "stderr", "log file (%h host, %p pid)"),
      integer("TIMEOUT", 1, INT_MAX / 1000, "300", "seconds any wait may last"),
      text("SOCKET_IFNAME", "the interface that reaches the root", "interfaces for TCP (NCCL syntax)"),
      integer("NSOCKS", 1, 64, "2", "TCP sockets per remote peer"),
      integer("SPIN_US", 0, 100000, "up to 1000 (adapting to the waits); none when ranks outnumber CPUs",
              "longest busy-poll of a wait before it sleeps, us (0: never, nor yield-poll)"),
      text("ALGO", "cost model", "force or exclude algorithms"),
      bytes("CHUNK_BYTES", 64, 1LL << 30, true, "512 KiB", "pipeline chunk of ring/chain/tree algorithms (0: default)"),
      text("RING_ORDER", "topology", "topology or rank"),
      text("TRANSPORT", "tcp", "tcp, ucx, ibverbs or inproc"),
      text("HOSTID", "hostname + boot id", "host id that groups ranks into nodes"),
      flag("SHM_DISABLE", "0", "the network path between ranks on one host"),
      bytes("SHM_CHUNK_BYTES", 64, 1LL << 30, true, "32-128 KiB by size",
            "pipeline chunk of the shared-memory collectives (0: by size)"),
      bytes("SHM_CMA_MIN_BYTES", 1, kMaxBytes, true, "32 KiB allreduce, 8 KiB gathers (2 ranks)",
            "smallest buffer per rank read by CMA (0: off)"),
      bytes("SHM_CMA_CHUNK_BYTES", 4096, kMaxBytes, true, "the whole call",
            "chunk of the CMA allreduce (0: the whole call)"),
      flag("SHM_HUGEPAGES", "1", "huge pages for buffers peers reach by CMA"),
      flag("SHM_CMA_LEARN", "1",
           "try the CMA forms (and rendezvous for long point-to-point messages) against staging, keep the faster"),
      decimal("SHM_KERNEL_COPY_RATIO", 1000, "measured at setup",
              "process_vm_readv's rate over memcpy's; under 0.5 CMA starts avoided, without a trial (but from "
              "64 KiB per rank, allreduce 32 KiB, where ranks own their CPUs), and long point-to-point messages "
              "start staged"),
      integer("SHM_SHARED_CACHE", 0, 1, "measured at setup",
              "whether the host's ranks share a last-level cache (1) or not (0), where kernel copies are slow and "
              "ranks own their CPUs: sharing one, large out-of-place calls start staged"),
      launch(integer("RANK", 0, kMaxRanks, "", "this process's rank (tern-run)")),
      launch(integer("WORLD_SIZE", 1, kMaxRanks, "", "number of ranks (tern-run)")),
      launch(integer("LOCAL_RANK", 0, kMaxRanks, "", "rank on this host (tern-run)")),
      launch(integer("LOCAL_SIZE", 1, kMaxRanks, "", "ranks on this host (tern-run)")),
      launch(text("ROOT_ADDR", "", "bootstrap root host:port")),
      launch(integer("ROOT_PORT", 1, 65535, "MASTER_PORT + 1", "root port when the root comes from MASTER_ADDR")),
      launch(text("SECRET", "", "the job secret, 32 hex digits")),
      launch(text("SECRET_FILE", "", "a file holding the job secret")),
      launch(flag("INSECURE", "0", "derive the secret from public values (trusted test networks only)")),
      text("COMPRESS", "off", "codec for float sum/avg allreduces of unmodified programs"),
      text("COMPRESS_WHEN", "model", "model or always"),
      bytes("COMPRESS_MIN_BYTES", 0, kMaxBytes, false, "65536", "smaller allreduces are not compressed"),
      text("COMPRESS_HIER", "auto", "1, 0 or auto"),
      text("TOPO_FILE", "detect (once per process)", "this host's topology from a file"),
      text("TOPO_DUMP_FILE", "", "where rank 0 writes the job topology (%h host, %p pid)"),
      text("TUNE_FILE", "built-in figures", "calibration written by tern-calc --calibrate"),
      integer("LEARN_CALLS", 0, 1000, "8", "network-crossing calls timed before the network is learned (0: off)"),
      bytes("LEARN_MIN_BYTES", 0, kMaxBytes, false, "262144", "smaller calls are not timed for learning"),
      text("TUNE_DUMP_FILE", "", "where rank 0 writes what its communicator learned (tune-file format)"),
      text("REDUCE_ISA", "best available", "scalar, avx2 or avx512"),
      text("DEVICE_ENGINE", "auto", "engine of stream-ordered calls on device buffers: auto, nccl or staged"),
      text("NCCL_LIB", "loaded or found libnccl.so.2", "path of the NCCL library the device engine uses"),
      // libtern_train reads it (through ternGetKnobNumber); fractions allowed, as PyTorch's bucket_cap_mb.
      decimal("BUCKET_MB", 1LL << 20, "25", "DDP gradient bucket of libtern_train, megabytes"),
      bytes("UCX_REG_MIN_BYTES", 1, kMaxBytes, false, "256 KiB", "smallest buffer UCX registers in place"),
      bytes("UCX_REG_CACHE_BYTES", 0, kMaxBytes, false, "1 GiB", "UCX registration cache (0: off)"),
      text("IB_HCA", "all active ports", "InfiniBand devices and ports (NCCL syntax)"),
      ib(integer("IB_GID_INDEX", -1, 65535, "automatic", "RoCE GID index (-1: choose)")),
      ib(bytes("IB_CHUNK_BYTES", 4096, 64LL << 20, false, "128K", "ibverbs message chunk")),
      ib(integer("IB_SLOTS", 2, 1024, "8", "ibverbs receive slots per peer")),
      ib(integer("IB_TIMEOUT", 1, 31, "20", "InfiniBand local ACK timeout exponent")),
      ib(integer("IB_RETRY_CNT", 0, 7, "7", "InfiniBand retry count")),
      ib(integer("IB_SL", 0, 15, "0", "InfiniBand service level")),
      ib(integer("IB_TC", 0, 255, "0", "InfiniBand traffic class")),
      // Test hooks: not for users, so not in the README's table.
      text("TEST_SHM_KILL", "off",
           "<rank>:<step>: that rank SIGKILLs itself at that shared-memory setup step (tests/shm/setup_kill_test.sh)"),
  };
  return table;
}

const KnobSpec* findKnob(const std::string& name) {
  for (const KnobSpec& k : knobTable()) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

std::string knobRange(const KnobSpec& k) {
  if (k.kind == KnobKind::kDecimal) return "above 0 up to " + std::to_string(k.max);
  std::string r = std::to_string(k.min) + ".." + std::to_string(k.max);
  return k.zeroAllowed ? "0 or " + r : r;
}

std::optional<long long> parseKnobNumber(const KnobSpec& k, const std::string& value, std::string* error) {
  auto refuse = [&](const char* why) -> std::optional<long long> {
    *error = std::string("TERN_") + k.name + "=" + value + ": " + why + "; expected " +
             (k.kind == KnobKind::kBytes ? "bytes (K, M, G suffixes allowed) in " : "an integer in ") + knobRange(k) +
             " (" + k.meaning + ")";
    return std::nullopt;
  };
  const char* s = value.c_str();
  if (!(std::isdigit(static_cast<unsigned char>(*s)) || *s == '-' || *s == '+')) return refuse("not a number");
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s, &end, 10);
  if (end == s || !std::isdigit(static_cast<unsigned char>(end[-1]))) return refuse("not a number");
  if (errno == ERANGE) return refuse("out of range");
  if (k.kind == KnobKind::kBytes && *end != '\0' && end[1] == '\0') {
    long long unit = 1;
    switch (*end) {
      case 'k':
      case 'K':
        unit = 1LL << 10;
        break;
      case 'm':
      case 'M':
        unit = 1LL << 20;
        break;
      case 'g':
      case 'G':
        unit = 1LL << 30;
        break;
      default:
        break;
    }
    if (unit > 1) {
      if (v > LLONG_MAX / unit || v < LLONG_MIN / unit) return refuse("out of range");
      v *= unit;
      ++end;
    }
  }
  if (*end != '\0') return refuse("not a number");
  if (!(v == 0 && k.zeroAllowed) && (v < k.min || v > k.max)) return refuse("out of range");
  return v;
}

std::optional<double> parseKnobDecimal(const KnobSpec& k, const std::string& value, std::string* error) {
  auto refuse = [&](const char* why) -> std::optional<double> {
    *error = std::string("TERN_") + k.name + "=" + value + ": " + why + "; expected a decimal number " + knobRange(k) +
             " (" + k.meaning + ")";
    return std::nullopt;
  };
  // Plain decimal notation only: strtod would also take hex floats, "inf", "nan" and leading blanks.
  const char* s = value.c_str();
  if (value.empty() || value.find_first_not_of("0123456789.+-eE") != std::string::npos) {
    return refuse("not a number");
  }
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (end == s || *end != '\0') return refuse("not a number");
  if (errno == ERANGE || !(v > 0) || v > static_cast<double>(k.max)) return refuse("out of range");
  return v;
}

std::optional<std::string> envString(const char* name) {
  declared(name);
  return processLookup(name);
}

long envInt(const char* name, long fallback) {
  const KnobSpec& k = declared(name);
  if (!integral(k)) throwError(ternInternalError, "TERN_%s is not an integer knob", name);
  auto v = processLookup(name);
  if (!v) return fallback;
  std::string error;
  std::optional<long long> x = parseKnobNumber(k, *v, &error);
  if (!x) throwError(ternInvalidUsage, "%s", error.c_str());
  return static_cast<long>(*x);
}

double envDecimal(const char* name, double fallback) {
  const KnobSpec& k = declared(name);
  if (k.kind != KnobKind::kDecimal) throwError(ternInternalError, "TERN_%s is not a decimal knob", name);
  auto v = processLookup(name);
  if (!v) return fallback;
  std::string error;
  std::optional<double> x = parseKnobDecimal(k, *v, &error);
  if (!x) throwError(ternInvalidUsage, "%s", error.c_str());
  return *x;
}

bool envFlag(const char* name, bool fallback) {
  declared(name);
  auto v = processLookup(name);
  if (!v) return fallback;
  const int x = flagValue(*v);
  if (x < 0) {
    std::fprintf(stderr, "tern: TERN_%s=%s is not 1/0, true/false, yes/no or on/off; using %d\n", name, v->c_str(),
                 fallback ? 1 : 0);
    return fallback;
  }
  return x == 1;
}

Knobs readKnobs(const std::function<std::optional<std::string>(const char*)>& lookup) {
  Knobs x;
  auto str = [&](const char* name) { return lookup(name).value_or(""); };
  // Every numeric knob of the table is checked here, those read elsewhere too, so that a bad one fails every init.
  for (const KnobSpec& k : knobTable()) {
    if (!numeric(k) || k.checkedWhereRead) continue;
    if (auto v = lookup(k.name); v && !v->empty()) {
      std::string error;
      const bool valid = k.kind == KnobKind::kDecimal ? parseKnobDecimal(k, *v, &error).has_value()
                                                      : parseKnobNumber(k, *v, &error).has_value();
      if (!valid) x.errors.push_back(error);
    }
  }
  auto number = [&](const char* name, long long fallback) {
    auto v = lookup(name);
    if (!v || v->empty()) return fallback;
    std::string ignored;  // recorded above
    return parseKnobNumber(*findKnob(name), *v, &ignored).value_or(fallback);
  };
  auto onOff = [&](const char* name, bool fallback) {
    auto v = lookup(name);
    if (!v || v->empty()) return fallback;
    const int f = flagValue(*v);
    if (f < 0) {
      x.warnings.push_back(std::string("TERN_") + name + "=" + *v +
                           " is not 1/0, true/false, yes/no or on/off; using " + (fallback ? "1" : "0"));
      return fallback;
    }
    return f == 1;
  };
  x.debugLevel = str("DEBUG");
  x.debugSubsys = str("DEBUG_SUBSYS");
  x.debugFile = str("DEBUG_FILE");
  x.timeoutSec = static_cast<int>(number("TIMEOUT", 300));
  x.nSocketsPerPeer = static_cast<int>(number("NSOCKS", 2));
  x.spinUs = static_cast<int>(number("SPIN_US", -1));
  x.socketIfname = str("SOCKET_IFNAME");
  x.transport = str("TRANSPORT");
  x.algo = str("ALGO");
  x.shmDisable = onOff("SHM_DISABLE", false);
  x.chunkBytes = static_cast<long>(number("CHUNK_BYTES", 0));
  const std::string order = lookup("RING_ORDER").value_or("topology");
  if (order != "topology" && order != "rank") {
    x.warnings.push_back("TERN_RING_ORDER must be 'topology' or 'rank', got '" + order + "'; using topology");
  }
  x.ringOrderByRank = order == "rank";
  x.compress = str("COMPRESS");
  x.compressMinBytes = static_cast<long>(number("COMPRESS_MIN_BYTES", 64 * 1024));
  const std::string when = lookup("COMPRESS_WHEN").value_or("model");
  if (when != "model" && when != "always") {
    x.warnings.push_back("TERN_COMPRESS_WHEN must be 'model' or 'always', got '" + when + "'; using model");
  }
  x.compressAlways = when == "always";
  const std::optional<std::string> hier = lookup("COMPRESS_HIER");
  x.compressHier = -1;
  if (hier && !hier->empty() && *hier != "auto") {
    const int f = flagValue(*hier);
    if (f < 0) {
      x.warnings.push_back("TERN_COMPRESS_HIER must be 1, 0 or auto, got '" + *hier + "'; using auto");
    } else {
      x.compressHier = f;
    }
  }
  x.topoFile = str("TOPO_FILE");
  x.topoDumpFile = str("TOPO_DUMP_FILE");
  x.learnCalls = static_cast<int>(number("LEARN_CALLS", 8));
  x.learnMinBytes = static_cast<long>(number("LEARN_MIN_BYTES", 256 * 1024));
  x.tuneDumpFile = str("TUNE_DUMP_FILE");
  x.deviceEngine = lookup("DEVICE_ENGINE").value_or("auto");
  if (x.deviceEngine.empty()) x.deviceEngine = "auto";
  if (x.deviceEngine != "auto" && x.deviceEngine != "nccl" && x.deviceEngine != "staged") {
    x.warnings.push_back("TERN_DEVICE_ENGINE must be auto, nccl or staged, got '" + x.deviceEngine + "'; using auto");
    x.deviceEngine = "auto";
  }
  x.ncclLib = str("NCCL_LIB");
  return x;
}

const Knobs& knobs() {
  static const Knobs k = [] {
    Knobs x = readKnobs(&processLookup);
    for (const std::string& w : x.warnings) std::fprintf(stderr, "tern: %s\n", w.c_str());
    return x;
  }();
  return k;
}

void requireValidKnobs(const char* fn) {
  const Knobs& k = knobs();
  if (k.errors.empty()) return;
  std::string all;
  for (const std::string& e : k.errors) all += (all.empty() ? "" : "; ") + e;
  throwError(ternInvalidUsage, "%s: %s", fn, all.c_str());
}

}  // namespace tern
