// Groups: tern's groups (per thread, nesting; the outermost End runs every recorded call, several communicators
// together), plus the communicator creations called inside a group, which the outermost End runs concurrently.
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "shim_internal.hpp"

namespace tern::nccl {

thread_local int groupDepth = 0;
thread_local std::vector<std::unique_ptr<char[]>> groupScratch;

namespace {

struct DeferredCreation {
  std::string description;
  ncclComm_t parent;  // split, shrink: the communicator they use; NULL for an init
  std::function<ncclResult_t()> create;
};
thread_local std::vector<DeferredCreation> deferredCreations;

// Runs this thread's deferred creations concurrently and joins them: every init on a thread of its own, the
// creations from one parent on one thread in call order (a communicator is used by one thread at a time). Each
// returns when its communicator is made, fails, or its init deadline (TERN_TIMEOUT, or the config's) passes, so
// the joins are bounded. The first failure (in call order) is reported, with how many failed.
ncclResult_t runDeferredCreations() {
  std::vector<DeferredCreation> jobs = std::move(deferredCreations);
  deferredCreations.clear();
  if (jobs.empty()) return ncclSuccess;
  std::vector<std::vector<size_t>> lanes;
  std::map<ncclComm_t, size_t> laneOfParent;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].parent == nullptr) {
      lanes.push_back({i});
      continue;
    }
    auto [it, added] = laneOfParent.emplace(jobs[i].parent, lanes.size());
    if (added) lanes.emplace_back();
    lanes[it->second].push_back(i);
  }
  std::vector<ncclResult_t> results(jobs.size(), ncclSuccess);
  std::vector<std::string> errors(jobs.size());
  std::vector<std::thread> threads;
  threads.reserve(lanes.size());
  for (const std::vector<size_t>& lane : lanes) {
    try {
      threads.emplace_back([&results, &errors, &jobs, &lane] {
        for (size_t i : lane) {
          results[i] = jobs[i].create();
          if (results[i] != ncclSuccess) errors[i] = lastError(nullptr);
        }
      });
    } catch (const std::system_error& e) {
      // Their peers in this group then fail at their deadline rather than hang.
      for (size_t i : lane) {
        results[i] = ncclSystemError;
        errors[i] = std::string("could not start a thread: ") + e.what();
      }
    }
  }
  for (std::thread& t : threads) t.join();
  size_t failed = 0;
  size_t first = jobs.size();
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (results[i] == ncclSuccess) continue;
    if (failed++ == 0) first = i;
  }
  if (failed == 0) return ncclSuccess;
  return fail(results[first], "ncclGroupEnd: %zu of the group's %zu communicator creations failed; %s: %s", failed,
              jobs.size(), jobs[first].description.c_str(), errors[first].c_str());
}

}  // namespace

void deferCreation(std::string description, ncclComm_t parent, std::function<ncclResult_t()> create) {
  deferredCreations.push_back({std::move(description), parent, std::move(create)});
}

}  // namespace tern::nccl

using namespace tern::nccl;

NCCL_SHIM_API ncclResult_t ncclGroupStart() {
  ++groupDepth;
  return fromTern(ternGroupStart());
}

// The outermost End creates the group's communicators first (nothing recorded can use them: their handles are
// only written now), then runs the recorded calls. A creation's failure is the group's result; the calls recorded
// on other communicators still run.
NCCL_SHIM_API ncclResult_t ncclGroupEnd() {
  if (groupDepth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  const bool outermost = groupDepth == 1;
  const ncclResult_t created = outermost ? runDeferredCreations() : ncclSuccess;
  ternResult_t r = ternGroupEnd();
  if (--groupDepth == 0) groupScratch.clear();
  if (created != ncclSuccess) return created;
  return fromTern(r);
}

NCCL_SHIM_API ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t*) {
  return unsupported("ncclGroupSimulateEnd",
                     "tern's cost model is queried through ternQueryAlgorithm; the recorded group stays open");
}
