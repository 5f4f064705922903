// Test helper: runs a function on N ranks, each a thread with its own communicator, over the in-process or the
// TCP (loopback) transport.
#pragma once

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_id.hpp"
#include "tern/tern.h"

namespace tern::testing {

enum class Wire { kInproc, kTcp };

inline std::string wireName(Wire w) { return w == Wire::kInproc ? "inproc" : "tcp"; }

// Creates the communicators (collectively), runs body(comm, rank) on every rank, destroys them. Failures inside
// body are reported by gtest assertions in the threads.
inline void runOnRanks(int n, Wire wire, const std::function<void(ternComm_t, int)>& body,
                       ternConfig_t* config = nullptr) {
  ternUniqueId id;
  if (wire == Wire::kInproc) {
    id = makeInprocUniqueId().pack();
  } else {
    ternGetUniqueId(&id);
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ternComm_t comm = nullptr;
      ternResult_t res = ternCommInitRankConfig(&comm, n, id, r, config);
      if (res != ternSuccess || comm == nullptr) {
        ADD_FAILURE() << "rank " << r << " init failed: " << ternGetLastError(nullptr);
        return;
      }
      body(comm, r);
      ternCommDestroy(comm);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace tern::testing
