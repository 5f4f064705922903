// The transport interface: every algorithm runs over it without knowing which transport it is.
//
// A transport connects this rank to every peer of one communicator and moves byte ranges of the memory kinds it
// carries (base/memory.hpp: every transport today carries host memory; device memory needs a device transport).
// Transfers are posted non-blocking and complete later, during progress(). Matching is FIFO per (peer, direction): the
// k-th send this rank posts to peer P is received by the k-th receive P posts from this rank, and both must name the
// same size (a mismatch is reported as an error, never silently truncated). The executor guarantees the posting order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/memory.hpp"

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

  // Posts a send of src to peer / a receive from peer into dst. A memory kind the transport does not carry is
  // refused with tern::Error(ternInvalidUsage) naming the kind, the transport and the peer, before anything is
  // posted.
  void postSend(int peer, const ConstMemRef& src, Transfer* transfer) {
    if (!carries(src.kind)) refuseMemory(src.kind, peer, "send to");
    startSend(peer, src, transfer);
  }
  void postRecv(int peer, const MemRef& dst, Transfer* transfer) {
    if (!carries(dst.kind)) refuseMemory(dst.kind, peer, "receive from");
    startRecv(peer, dst, transfer);
  }
  // Host memory (the transports' own exchanges, the tests).
  void postSend(int peer, const void* data, size_t bytes, Transfer* transfer) {
    postSend(peer, hostMemory(data, bytes), transfer);
  }
  void postRecv(int peer, void* data, size_t bytes, Transfer* transfer) {
    postRecv(peer, hostMemory(data, bytes), transfer);
  }

  // Whether this transport can read and write memory of this kind directly. Host memory, plain or registered, for
  // every host transport.
  virtual bool carries(MemoryKind kind) const { return isHostMemory(kind); }

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

 protected:
  // The transfers themselves, of a memory kind carries() accepted.
  virtual void startSend(int peer, const ConstMemRef& src, Transfer* transfer) = 0;
  virtual void startRecv(int peer, const MemRef& dst, Transfer* transfer) = 0;

 private:
  [[noreturn]] void refuseMemory(MemoryKind kind, int peer, const char* what) const;
};

}  // namespace tern
