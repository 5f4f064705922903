// The transport interface: every algorithm runs over it without knowing which transport it is.
//
// A transport connects this rank to every peer of one communicator and moves byte ranges. Transfers are posted
// non-blocking and complete later, during progress(). Matching is FIFO per (peer, direction): the k-th send this
// rank posts to peer P is received by the k-th receive P posts from this rank, and both must name the same size
// (a mismatch is reported as an error, never silently truncated). The executor guarantees the posting order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tern {

// One posted transfer. Owned by the caller; must stay alive (and unmoved) until done is true or the transport has
// failed. The transport's own bookkeeping lives in the transport, keyed by this object's address.
struct Transfer {
  bool done = false;
  size_t bytes = 0;
  uint32_t pendingParts = 0;  // for the transport's use (e.g. stripes across sockets still in flight)
};

class Transport {
 public:
  virtual ~Transport() = default;

  // Short name for logs ("tcp", "inproc", "shm").
  virtual const char* name() const = 0;

  virtual void postSend(int peer, const void* data, size_t bytes, Transfer* transfer) = 0;
  virtual void postRecv(int peer, void* data, size_t bytes, Transfer* transfer) = 0;

  // Advances posted transfers as far as possible without blocking. If none completed and waitMs > 0, sleeps until
  // there is activity (or waitMs passes) and tries again. Returns the number of transfers completed by this call.
  // Throws tern::Error when a peer fails, a connection closes, or the transport was aborted.
  virtual int progress(int waitMs) = 0;

  // Makes every current and future progress() throw, wakes any thread blocked in it, and makes peers notice
  // (closes connections). Safe from any thread. reason appears in the errors.
  virtual void abort(const std::string& reason) = 0;

  // The call whose transfers are still posted has failed (abort() came first) and its caller gets its buffers back
  // next: once this returns, no peer reads or writes them. A transport whose peers can reach into this rank's
  // memory waits for the ones doing so, bounded by its timeout (a peer that neither finishes nor fails within it is
  // logged). Called by the thread that ran the call.
  virtual void withdrawAfterFailure() {}

  // True while any posted transfer has not completed (lets a composite transport sleep on the right one).
  virtual bool hasPending() const = 0;

  // True when peer shares this rank's host (same host id): used to choose intra-node algorithms.
  virtual bool sameHost(int /*peer*/) const { return false; }
};

}  // namespace tern
