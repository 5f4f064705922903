// The ibverbs transport's environment knobs, parsed strictly (a typo is an error at init, not a silent default):
//
//   TERN_IB_HCA         devices/ports to use, NCCL syntax (ib_hca_spec.hpp); default: every active port
//   TERN_IB_GID_INDEX   GID index for RoCE; default: automatic (RoCE v2, IPv4-mapped first; ib_gid.hpp)
//   TERN_IB_CHUNK_BYTES payload bytes per ring slot (K/M suffixes); default 128K, 4K..64M
//   TERN_IB_SLOTS       slots per peer ring (= credits); default 8, 2..1024
//   TERN_IB_TIMEOUT     QP ack timeout exponent (4.096 us * 2^n); default 20, 1..31
//   TERN_IB_RETRY_CNT   QP transport retries; default 7, 0..7
//   TERN_IB_SL          InfiniBand service level; default 0, 0..15
//   TERN_IB_TC          traffic class (RoCE: DSCP << 2); default 0, 0..255
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "transport/ibverbs/ib_hca_spec.hpp"
#include "transport/ibverbs/ib_qp.hpp"

namespace tern::ib {

struct Settings {
  HcaSpec hca;
  int gidIndex = -1;
  size_t chunkBytes = 128 * 1024;
  uint32_t slots = 8;
  QpTuning tuning;
};

// lookup(name) returns TERN_<name>'s value, or nothing when unset. Throws tern::Error(ternInvalidArgument) naming
// the variable on a malformed or out-of-range value.
Settings parseSettings(const std::function<std::optional<std::string>(const char*)>& lookup);
// From the process environment.
Settings settingsFromEnv();

}  // namespace tern::ib
