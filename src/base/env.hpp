// Every environment knob tern reads, declared in one place (as NCCL's param table): name, kind, accepted range,
// default, and what a bad value does. Reads go through envString/envInt/envFlag, which refuse a name the table does
// not declare; knobs() is the process's snapshot of the communicator knobs, read and validated once.
//
// What a bad value does: every numeric knob (a malformed number, or one out of its range) is an init error,
// ternInvalidUsage from ternGetUniqueId and ternCommInit* (TERN_IB_*: ternInvalidArgument from the ibverbs
// transport's init, as before): a timeout, size or count was set on purpose, and running
// on with the default would hide the mistake in exactly what it was set for (and a TERN_TIMEOUT of 0 or one whose
// milliseconds overflow would fail every wait at once as "timed out"). Words (TERN_RING_ORDER, TERN_COMPRESS_WHEN,
// TERN_COMPRESS_HIER, flags) warn and take their default, as they always have.
//
// Nothing else in the library calls getenv for a TERN_ variable (tests/knobs_declared_test.sh checks it); other
// programs' variables (launchers', UCX's) are read through launcherVariable (core/env_init.hpp) and UCX itself.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tern {

enum class KnobKind {
  kString,   // free text (paths, lists, names), or words checked where they are used
  kFlag,     // 1/0, true/false, yes/no, on/off
  kInt,      // a decimal integer
  kBytes,    // a decimal integer of bytes, with an optional K, M or G suffix (powers of 1024)
  kDecimal,  // a decimal number, fractions allowed, above 0 and at most max (TERN_BUCKET_MB's megabytes)
};

struct KnobSpec {
  const char* name;  // without the TERN_ prefix
  KnobKind kind;
  long long min = 0;  // numeric kinds: accepted range [min, max] ...
  long long max = 0;
  bool zeroAllowed = false;  // ... and 0 (meaning "off" or "the default") below min
  const char* meaning = "";
  // Checked only where it is read, not in the snapshot every init checks: the launch variables (by
  // ternCommInitFromEnv) and TERN_IB_* (by the ibverbs transport, with ternInvalidArgument, docs/TRANSPORTS.md).
  bool checkedWhereRead = false;
  const char* byDefault = "";  // what applies when it is unset or empty, as the README's table says it
};

// The table, in the order the README lists the knobs.
const std::vector<KnobSpec>& knobTable();
// The entry for a name without the TERN_ prefix; nullptr when undeclared.
const KnobSpec* findKnob(const std::string& nameWithoutPrefix);
// Parses a numeric knob's text: its value, or nullopt with *error naming the variable, the value and the range.
std::optional<long long> parseKnobNumber(const KnobSpec& spec, const std::string& text, std::string* error);
// The same for a kDecimal knob.
std::optional<double> parseKnobDecimal(const KnobSpec& spec, const std::string& text, std::string* error);
// The accepted range, as messages and the README say it ("1..2147483", "0 or 64..1073741824", "above 0 to 1048576").
std::string knobRange(const KnobSpec& spec);

// Raw lookup with the TERN_ prefix applied: envString("TIMEOUT") reads TERN_TIMEOUT. Read at each call (tools and
// tests that change the environment see the change). An undeclared name is an internal error.
std::optional<std::string> envString(const char* nameWithoutPrefix);
// A numeric knob: fallback when unset; a bad value throws ternInvalidUsage naming the variable, value and range.
long envInt(const char* nameWithoutPrefix, long fallback);
// A kDecimal knob: fallback when unset; a bad value throws ternInvalidUsage naming the variable, value and range.
double envDecimal(const char* nameWithoutPrefix, double fallback);
// A flag knob: fallback when unset; a value that is not a flag word warns and gives fallback.
bool envFlag(const char* nameWithoutPrefix, bool fallback);

struct Knobs {
  std::string debugLevel;    // TERN_DEBUG: WARN | INFO | TRACE (default: errors and warnings only)
  std::string debugSubsys;   // TERN_DEBUG_SUBSYS: comma list (INIT,NET,COLL,ALL), ^ to exclude
  std::string debugFile;     // TERN_DEBUG_FILE: path with %h host and %p pid
  int timeoutSec;            // TERN_TIMEOUT: every wait, seconds (default 300)
  int nSocketsPerPeer;       // TERN_NSOCKS: TCP sockets per peer (default 2)
  int spinUs;                // TERN_SPIN_US: ceiling of the waits' busy-poll, microseconds (-1: by ranks per CPU)
  std::string socketIfname;  // TERN_SOCKET_IFNAME: NCCL syntax (prefix list, ^ exclude, = exact)
  std::string transport;     // TERN_TRANSPORT: tcp | inproc (default tcp)
  std::string algo;          // TERN_ALGO
  bool shmDisable;           // TERN_SHM_DISABLE
  long chunkBytes;           // TERN_CHUNK_BYTES: pipeline chunk (0 = per transport default)
  bool ringOrderByRank;      // TERN_RING_ORDER=rank: rings/trees follow rank order (default topology: by host)
  std::string compress;      // TERN_COMPRESS: default codec for float allreduces (sign, qsgd:4, topk:0.01, bf16)
  long compressMinBytes;     // TERN_COMPRESS_MIN_BYTES: smaller allreduces are not compressed (default 64 KiB)
  bool compressAlways;       // TERN_COMPRESS_WHEN=always: compress even where the cost model says it does not pay
  int compressHier;          // TERN_COMPRESS_HIER: 1 compressed_hier, 0 the flat form, -1 (unset) the cost model
  std::string topoFile;      // TERN_TOPO_FILE: this host's topology from a file instead of detection
  std::string topoDumpFile;  // TERN_TOPO_DUMP_FILE: rank 0 writes the job topology its communicator assembled
  int learnCalls;            // TERN_LEARN_CALLS: timed network-crossing calls before learning the network (0: off)
  long learnMinBytes;        // TERN_LEARN_MIN_BYTES: smaller calls are not timed for learning
  std::string tuneDumpFile;  // TERN_TUNE_DUMP_FILE: rank 0 writes the cost parameters it learned
  std::string deviceEngine;  // TERN_DEVICE_ENGINE: auto | nccl | staged (stream-ordered calls on device buffers)
  std::string ncclLib;       // TERN_NCCL_LIB: the real libnccl for the device engine (empty: search)
  // Every bad numeric value of the table (those read elsewhere too), one message each; the knob then holds its
  // default. See requireValidKnobs.
  std::vector<std::string> errors;
  // Bad words and flags: warned about once, when the snapshot is taken.
  std::vector<std::string> warnings;
};

// A snapshot from any environment (lookup gets a name without the TERN_ prefix); knobs() is readKnobs of the
// process environment, once.
Knobs readKnobs(const std::function<std::optional<std::string>(const char*)>& lookup);
const Knobs& knobs();
// Throws ternInvalidUsage listing knobs().errors, prefixed with fn; called where communicators are made.
void requireValidKnobs(const char* fn);

}  // namespace tern
