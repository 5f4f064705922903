// Test helper: n Communicators (the library's internal object, for tests that look at what init assembled), one per
// thread, over TCP on loopback or in process; and their teardown, all ranks at once (a rank's destruction waits for
// its peers).
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "core/communicator.hpp"
#include "tern/tern.h"

namespace tern::testing {

// beforeInit(rank), when given, runs on the rank's thread just before it creates its communicator. A rank whose
// init fails is a test failure and a null entry.
inline std::vector<std::unique_ptr<Communicator>> createCommunicators(int n, bool inproc,
                                                                      const std::function<void(int)>& beforeInit = {}) {
  UniqueIdData id = inproc ? makeInprocUniqueId() : [] {
    ternUniqueId packed;
    EXPECT_EQ(ternGetUniqueId(&packed), ternSuccess);
    return UniqueIdData::unpack(packed);
  }();
  std::vector<std::unique_ptr<Communicator>> comms(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      if (beforeInit) beforeInit(r);
      try {
        CommOptions opts = resolveOptions(nullptr);
        opts.timeoutMs = 30000;
        comms[static_cast<size_t>(r)] = Communicator::create(n, id, r, opts);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << r << ": " << e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return comms;
}

inline void destroyCommunicators(std::vector<std::unique_ptr<Communicator>>& comms) {
  std::vector<std::thread> threads;
  threads.reserve(comms.size());
  for (auto& c : comms) threads.emplace_back([&c] { c.reset(); });
  for (std::thread& t : threads) t.join();
}

}  // namespace tern::testing
