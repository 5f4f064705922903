// Runs a body on N ranks, each a thread with its own communicator, using only the public API (ternGetUniqueId +
// ternCommInitRank). The in-process transport is selected through TERN_TRANSPORT (set here unless the caller
// chose one), which the library reads once per process.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

#include "tern/tern.h"

namespace tern::train::testing {

inline void runRanks(int n, const std::function<void(ternComm_t, int)>& body) {
  setenv("TERN_TRANSPORT", "inproc", 0);
  ternUniqueId id;
  ASSERT_EQ(ternGetUniqueId(&id), ternSuccess) << ternGetLastError(nullptr);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ternComm_t comm = nullptr;
      ternResult_t res = ternCommInitRank(&comm, n, id, r);
      if (res != ternSuccess) {
        ADD_FAILURE() << "rank " << r << " init: " << ternGetLastError(nullptr);
        return;
      }
      try {
        body(comm, r);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << r << ": " << e.what();
        ternCommAbort(comm);  // wakes the other ranks instead of leaving them to time out
        return;
      }
      ternCommDestroy(comm);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace tern::train::testing
