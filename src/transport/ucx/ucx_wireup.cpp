#include "transport/ucx/ucx_wireup.hpp"

#include <ucs/config/global_opts.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "base/error.hpp"
#include "base/log.hpp"
#include "transport/shm/tcp_exchange.hpp"
#include "transport/ucx/ucx_status.hpp"

namespace tern::ucx {

std::vector<std::vector<char>> exchangeAddresses(const NetworkSetup& setup, const std::vector<char>& mine) {
  std::vector<int> peers;
  for (int p = 0; p < setup.nranks; ++p) {
    if (p != setup.rank) peers.push_back(p);
  }
  std::vector<std::vector<char>> all(setup.nranks);
  all[setup.rank] = mine;
  if (peers.empty()) return all;
  // Addresses differ in length (they list each rank's devices), and a round of the exchange carries one size:
  // first everyone's length, then every address padded to the longest (which all ranks now agree on).
  uint64_t myLength = mine.size();
  auto lengths = shm::exchangeWithPeers(setup.tcp, setup.rank, peers, &myLength, sizeof(myLength), setup.deadline,
                                        setup.abortFlag, "UCX wire-up (worker address lengths)");
  std::vector<uint64_t> lengthOf(setup.nranks, 0);
  lengthOf[setup.rank] = myLength;
  for (size_t i = 0; i < peers.size(); ++i) std::memcpy(&lengthOf[peers[i]], lengths[i].data(), sizeof(uint64_t));
  uint64_t longest = *std::max_element(lengthOf.begin(), lengthOf.end());
  if (longest > (uint64_t{1} << 20)) {
    throwError(ternInternalError, "rank %d: ucx: a peer announced a %llu-byte worker address", setup.rank,
               static_cast<unsigned long long>(longest));
  }
  std::vector<char> padded(mine);
  padded.resize(longest, 0);
  auto blobs = shm::exchangeWithPeers(setup.tcp, setup.rank, peers, padded.data(), padded.size(), setup.deadline,
                                      setup.abortFlag, "UCX wire-up (worker addresses)");
  for (size_t i = 0; i < peers.size(); ++i) {
    all[peers[i]].assign(blobs[i].begin(), blobs[i].begin() + static_cast<ptrdiff_t>(lengthOf[peers[i]]));
  }
  return all;
}

namespace {

ucs_status_t createEndpoint(ucp_worker_h worker, const std::vector<char>& address, ucp_err_handling_mode_t mode,
                            ucp_err_handler_cb_t onError, void* arg, ucp_ep_h* ep) {
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.address = reinterpret_cast<const ucp_address_t*>(address.data());
  params.err_mode = mode;
  if (mode == UCP_ERR_HANDLING_MODE_PEER) {
    params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.err_handler.cb = onError;
    params.err_handler.arg = arg;
  }
  return ucp_ep_create(worker, &params, ep);
}

// UCX logs an ERROR line for an endpoint it cannot create; for the attempt with peer error handling, which is
// expected to fail on some transports, that line would only alarm. UCX's log level is process-global: the mutex
// keeps concurrent attempts (communicators created on several threads) from restoring each other's level.
ucs_status_t createEndpointQuietly(ucp_worker_h worker, const std::vector<char>& address, ucp_err_handler_cb_t onError,
                                   void* arg, ucp_ep_h* ep) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  ucs_log_level_t saved = ucs_global_opts.log_component.log_level;
  if (saved < UCS_LOG_LEVEL_DEBUG) ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_FATAL;
  ucs_status_t status = createEndpoint(worker, address, UCP_ERR_HANDLING_MODE_PEER, onError, arg, ep);
  ucs_global_opts.log_component.log_level = saved;
  return status;
}

}  // namespace

ucp_ep_h connectEndpoint(ucp_worker_h worker, int rank, int peer, const std::vector<char>& address,
                         ucp_err_handler_cb_t onError, void* arg, bool* peerErrors) {
  ucp_ep_h ep = nullptr;
  ucs_status_t status = createEndpointQuietly(worker, address, onError, arg, &ep);
  *peerErrors = status == UCS_OK;
  if (status == UCS_ERR_UNREACHABLE) {
    status = createEndpoint(worker, address, UCP_ERR_HANDLING_MODE_NONE, onError, arg, &ep);
    static std::atomic<bool> warned{false};
    if (status == UCS_OK && !warned.exchange(true)) {
      // A dead peer is still noticed through the TCP mesh, but UCX treats a transport error on an endpoint without
      // error handling as fatal (e.g. a CMA read from a killed process aborts this one).
      TERN_LOG(kWarn, kNet, rank,
               "ucx: the UCX transports reaching rank %d cannot report peer failures (UCX_TLS=%s; e.g. shared memory "
               "in UCX 1.13): UCX may abort this process if a peer dies mid-transfer; add tcp to UCX_TLS for "
               "failure-tolerant endpoints",
               peer, std::getenv("UCX_TLS") != nullptr ? std::getenv("UCX_TLS") : "(default)");
    }
  }
  if (status != UCS_OK) {
    throwError(resultFor(status),
               "rank %d: ucx: cannot create an endpoint to rank %d: %s (no UCX transport reaches it: check UCX_TLS "
               "and UCX_NET_DEVICES on both ranks)",
               rank, peer, ucs_status_string(status));
  }
  return ep;
}

}  // namespace tern::ucx
