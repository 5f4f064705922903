#include "transport/ucx/ucx_worker.hpp"

#include <cstdlib>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/log.hpp"
#include "transport/ucx/ucx_status.hpp"

namespace tern::ucx {

namespace {

const char* envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

// The transport names of a UCX_TLS list, without a leading "^" (which makes it an exclusion list).
std::vector<std::string> tlsNames(const std::string& list) {
  std::vector<std::string> names;
  size_t start = list.empty() || list[0] != '^' ? 0 : 1;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    names.push_back(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return names;
}

bool isExclusionList(const char* tls) { return tls != nullptr && tls[0] == '^'; }

// True when UCX_TLS names only tcp (and self): UCX will carry everything over TCP sockets.
bool tcpOnly(const char* tls) {
  if (tls == nullptr || *tls == '\0' || isExclusionList(tls)) return false;
  for (const std::string& name : tlsNames(tls))
    if (name != "tcp" && name != "self") return false;
  return true;
}

// True when UCX may use its TCP transport: UCX_TLS unset (all transports), a list naming tcp (or "all"), or an
// exclusion list that does not name tcp.
bool tcpMayCarryMessages(const char* tls) {
  if (tls == nullptr || *tls == '\0') return true;
  bool named = false;
  for (const std::string& name : tlsNames(tls)) named = named || name == "tcp" || name == "all";
  return isExclusionList(tls) ? !named : named;
}

}  // namespace

Worker::Worker(int rank, int nranks) : rank_(rank) {
  ucp_config_t* config = nullptr;
  check(ucp_config_read(nullptr, nullptr, &config), rank, "reading the UCX configuration (UCX_* environment)");
  // Over TCP, UCX's rendezvous gives every large message (each 512 KiB pipeline chunk of a collective) a handshake
  // whose reply queues behind data on a saturated link: 8-20% of a 1 Gb/s link, measured, for at most a saved
  // memory copy. So when UCX_TLS is TCP-only and the user did not choose UCX_RNDV_THRESH, every message goes eager.
  if (tcpOnly(std::getenv("UCX_TLS")) && std::getenv("UCX_RNDV_THRESH") == nullptr) {
    ucs_status_t s = ucp_config_modify(config, "RNDV_THRESH", "inf");
    if (s == UCS_OK)
      TERN_LOG(kInfo, kNet, rank, "ucx: UCX_TLS is TCP-only: rendezvous off (set UCX_RNDV_THRESH to override)");
  }
  // UCX 1.13's TCP transport can complete a zero-copy active message twice when a connection is reset while the
  // message is being sent (the socket error purges it, the endpoint's failure then completes it again) and aborts
  // the process on its own assertion: a survivor whose peer exits mid-send would crash instead of reporting the
  // lost rank. Eager messages over TCP therefore go by copy (UCX_ZCOPY_THRESH=inf); rendezvous (CMA, RDMA) keeps
  // zero copy. Set UCX_ZCOPY_THRESH to choose otherwise.
  if (tcpMayCarryMessages(std::getenv("UCX_TLS")) && std::getenv("UCX_ZCOPY_THRESH") == nullptr) {
    ucs_status_t s = ucp_config_modify(config, "ZCOPY_THRESH", "inf");
    if (s == UCS_OK)
      TERN_LOG(kInfo, kNet, rank, "ucx: eager messages over TCP by copy (set UCX_ZCOPY_THRESH to override)");
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS |
                      UCP_PARAM_FIELD_NAME;
  // WAKEUP: progress() sleeps on the worker's event fd instead of spinning.
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;
  params.estimated_num_eps = static_cast<size_t>(nranks);
  params.name = "tern";
  ucs_status_t status = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (status != UCS_OK) {
    throwError(resultFor(status), "rank %d: ucx: ucp_init failed: %s (UCX_TLS=%s, UCX_NET_DEVICES=%s)", rank,
               ucs_status_string(status), envOr("UCX_TLS", "(unset)"), envOr("UCX_NET_DEVICES", "(unset)"));
  }

  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  status = ucp_worker_create(context_, &wp, &worker_);
  if (status != UCS_OK) {
    ucp_cleanup(context_);
    check(status, rank, "ucp_worker_create");
  }
  status = ucp_worker_get_efd(worker_, &eventFd_);
  if (status != UCS_OK) {
    ucp_worker_destroy(worker_);
    ucp_cleanup(context_);
    check(status, rank, "ucp_worker_get_efd (the selected UCX transports cannot wake a sleeping worker)");
  }
  TERN_LOG(kInfo, kNet, rank, "ucx %s: worker ready (UCX_TLS=%s)", ucp_get_version_string(),
           envOr("UCX_TLS", "(UCX default)"));
}

Worker::~Worker() {
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
}

std::vector<char> Worker::address() const {
  ucp_address_t* addr = nullptr;
  size_t length = 0;
  check(ucp_worker_get_address(worker_, &addr, &length), rank_, "ucp_worker_get_address");
  std::vector<char> blob(reinterpret_cast<const char*>(addr), reinterpret_cast<const char*>(addr) + length);
  ucp_worker_release_address(worker_, addr);
  return blob;
}

unsigned Worker::drain() {
  unsigned rounds = 0;
  while (ucp_worker_progress(worker_) != 0) ++rounds;
  return rounds;
}

}  // namespace tern::ucx
