// Communicators made from something other than a unique id the caller passes: the launcher's environment
// (ternCommInitFromEnv) and a split of an existing communicator (ternCommSplit). The protocol of each lives here;
// the C API only checks its arguments and translates errors.
#include <algorithm>
#include <cstring>
#include <vector>

#include "base/env.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/socket.hpp"
#include "core/communicator.hpp"
#include "core/env_init.hpp"
#include "core/operation_pool.hpp"
#include "transport/bootstrap.hpp"

namespace tern {

std::unique_ptr<Communicator> Communicator::createFromEnvironment(const ternConfig_t* config) {
  LaunchEnv env = readLaunchEnv();
  UniqueIdData id;
  id.kind = RendezvousKind::kTcp;
  id.secret = env.secret;
  id.setRootAddress(env.rootAddress);
  if (env.rank == 0) {
    SocketAddress bound;
    Fd listener = listenOn(env.rootAddress, &bound);
    startBootstrapRoot(std::move(listener), env.secret, env.size, knobs().timeoutSec);
  }
  TERN_LOG(kInfo, kInit, env.rank, "init from %s environment: rank %d of %d, root %s", env.launcher.c_str(), env.rank,
           env.size, env.rootAddress.toString().c_str());
  const CommOptions opts = resolveOptions(config);
  return create(env.size, id, env.rank, opts);
}

UniqueIdData Communicator::newUniqueId(bool inproc) {
  if (!inproc) return createTcpUniqueId();
  UniqueIdData id;
  id.kind = RendezvousKind::kInproc;
  id.secret = Secret::random();
  return id;
}

void Communicator::runBlocking(const std::shared_ptr<Operation>& op) {
  enterCall();
  struct Exit {
    Communicator& c;
    ~Exit() { c.exitCall(); }
  } exitGuard{*this};
  submit(op, true);
  if (op->result != ternSuccess) throw Error(op->result, op->error);
}

std::unique_ptr<Communicator> Communicator::split(int color, int key, const ternConfig_t* config) {
  const int n = nranks_;
  // 1. Everyone learns everyone's (color, key).
  std::vector<int> mine = {color, key}, all(2 * n);
  runBlocking(newOperation(Collective::kAllGather, mine.data(), all.data(), 2, ternInt32, ternSum, 0));
  // 2. Members of each color sorted by (key, old rank); the first member makes the group's unique id.
  std::vector<int> members;
  for (int i = 0; i < n; ++i) {
    if (color >= 0 && all[2 * i] == color) members.push_back(i);
  }
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return all[2 * a + 1] < all[2 * b + 1]; });
  const bool leader = !members.empty() && members[0] == rank_;
  ternUniqueId myId;
  std::memset(&myId, 0, sizeof(myId));
  if (leader) myId = newUniqueId(inproc_).pack();
  // 3. Everyone learns the leaders' ids.
  std::vector<ternUniqueId> ids(n);
  runBlocking(newOperation(Collective::kAllGather, &myId, ids.data(), sizeof(ternUniqueId), ternUint8, ternSum, 0));
  if (color < 0) return nullptr;
  const int newRank = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
  ternConfig_t inherited = TERN_CONFIG_INITIALIZER;
  inherited.timeoutMs = options_.timeoutMs;
  inherited.nSocketsPerPeer = options_.socketsPerPeer;
  inherited.algo = options_.algo.c_str();
  inherited.compress = options_.compress.c_str();
  const CommOptions opts = resolveOptions(config != nullptr ? config : &inherited);
  return create(static_cast<int>(members.size()), UniqueIdData::unpack(ids[members[0]]), newRank, opts);
}

}  // namespace tern
