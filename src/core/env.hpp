// Every environment knob tern reads, declared in one place (as NCCL's param table). Read once per process.
#pragma once

#include <optional>
#include <string>

namespace tern {

// Raw lookup with the TERN_ prefix applied: envString("TIMEOUT") reads TERN_TIMEOUT.
std::optional<std::string> envString(const char* nameWithoutPrefix);
long envInt(const char* nameWithoutPrefix, long fallback);
bool envFlag(const char* nameWithoutPrefix, bool fallback);

struct Knobs {
  std::string debugLevel;    // TERN_DEBUG: WARN | INFO | TRACE (default: errors and warnings only)
  std::string debugSubsys;   // TERN_DEBUG_SUBSYS: comma list (INIT,NET,COLL,ALL), ^ to exclude
  std::string debugFile;     // TERN_DEBUG_FILE: path with %h host and %p pid
  int timeoutSec;            // TERN_TIMEOUT: every wait, seconds (default 300)
  int nSocketsPerPeer;       // TERN_NSOCKS: TCP sockets per peer (default 2)
  std::string socketIfname;  // TERN_SOCKET_IFNAME: NCCL syntax (prefix list, ^ exclude, = exact)
  std::string transport;     // TERN_TRANSPORT: tcp | inproc (default tcp)
  std::string algo;          // TERN_ALGO
  std::string hostId;        // TERN_HOSTID: overrides hostname + boot id
  bool shmDisable;           // TERN_SHM_DISABLE
  long chunkBytes;           // TERN_CHUNK_BYTES: pipeline chunk (0 = per transport default)
  bool ringOrderByRank;      // TERN_RING_ORDER=rank: rings/trees follow rank order (default topology: by host)
  std::string compress;      // TERN_COMPRESS: default codec for float allreduces (sign, qsgd:4, topk:0.01, bf16)
  long compressMinBytes;     // TERN_COMPRESS_MIN_BYTES: smaller allreduces are not compressed (default 64 KiB)
  bool compressAlways;       // TERN_COMPRESS_WHEN=always: compress even where the cost model says it does not pay
  int compressHier;          // TERN_COMPRESS_HIER: 1 compressed_hier, 0 the flat form, -1 (unset) the cost model
  std::string topoFile;      // TERN_TOPO_FILE: this host's topology from a file instead of detection
  std::string topoDumpFile;  // TERN_TOPO_DUMP_FILE: rank 0 writes the job topology its communicator assembled
};

const Knobs& knobs();

}  // namespace tern
