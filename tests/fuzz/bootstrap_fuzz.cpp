// The bootstrap protocol's decoders (src/transport/bootstrap.cpp), driven through the real code over loopback: the
// fuzzer's bytes become what a fake root answers a joining rank (the status and its message, the table header and
// every peer entry) or what a rank sends a real root (its hello and join). The harness knows the job secret and signs
// what it sends, so the fuzzer gets past authentication to the checks behind it; the decoders must refuse garbage
// with tern::Error and never read or print past a field.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "fuzz_util.hpp"
#include "transport/bootstrap.hpp"

using namespace tern;
namespace wire = tern::bootstrap_wire;

namespace {

const Secret& secret() {
  static const Secret s = Secret::random();
  return s;
}

SocketAddress loopback() { return SocketAddress::parse("127.0.0.1:0"); }

Clock::time_point soon() { return Clock::now() + std::chrono::seconds(2); }

// A fake root answering one rank with fuzzed status and table (signed with the job secret).
void fakeRoot(int listener, fuzz::Bytes in, int nranks) {
  try {
    Fd conn = acceptOne(listener, soon(), nullptr);
    const int fd = conn.get();
    wire::Hello hello;
    recvExact(fd, &hello, sizeof(hello), soon(), nullptr, "fuzz: hello");
    wire::Challenge challenge;
    challenge.nonce = freshNonce();
    challenge.proof = wire::rootProof(secret(), hello.nonce, challenge.nonce);
    sendExact(fd, &challenge, sizeof(challenge), soon(), nullptr, "fuzz: challenge");
    wire::Join join;
    recvExact(fd, &join, sizeof(join), soon(), nullptr, "fuzz: join");
    wire::Status status = in.take<wire::Status>();
    status.magic = wire::kMagic;
    status.proof = wire::statusProof(secret(), hello.nonce, challenge.nonce, status);
    sendExact(fd, &status, sizeof(status), soon(), nullptr, "fuzz: status");
    if (status.status != ternSuccess) return;
    wire::TableHeader header = in.take<wire::TableHeader>();
    if (header.nranks != nranks && (in.take<uint8_t>() & 1)) header.nranks = nranks;
    header.magic = wire::kMagic;
    std::vector<wire::PeerEntry> table(static_cast<size_t>(nranks));
    for (auto& e : table) e = in.take<wire::PeerEntry>();
    const Mac proof = wire::tableProof(secret(), hello.nonce, challenge.nonce, header, table.data(), table.size());
    sendExact(fd, &header, sizeof(header), soon(), nullptr, "fuzz: table");
    sendExact(fd, table.data(), table.size() * sizeof(wire::PeerEntry), soon(), nullptr, "fuzz: table");
    sendExact(fd, proof.data(), proof.size(), soon(), nullptr, "fuzz: table");
  } catch (const Error&) {
  }
}

void joinFakeRoot(fuzz::Bytes in) {
  static SocketAddress bound;
  static Fd listener = listenOn(loopback(), &bound);
  const int nranks = 1 + in.take<uint8_t>() % 4;
  UniqueIdData id;
  id.secret = secret();
  id.setRootAddress(bound);
  std::thread root(fakeRoot, listener.get(), in, nranks);
  try {
    joinBootstrap(id, 0, nranks, "fuzz-host", soon(), nullptr);
  } catch (const Error&) {
  }
  root.join();
}

// Sends a signed join for this rank and reads the root's answer (and its table when admitted); true if admitted.
bool joinRealRoot(const SocketAddress& root, const wire::Hello& hello, wire::Join join) {
  Fd conn = connectTo(root, soon(), nullptr);
  const int fd = conn.get();
  sendExact(fd, &hello, sizeof(hello), soon(), nullptr, "fuzz: hello");
  wire::Challenge challenge;
  recvExact(fd, &challenge, sizeof(challenge), soon(), nullptr, "fuzz: challenge");
  if (hello.magic != wire::kMagic || hello.version != wire::kVersion) return false;
  join.magic = wire::kMagic;
  join.proof = wire::joinProof(secret(), hello.nonce, challenge.nonce, join);
  sendExact(fd, &join, sizeof(join), soon(), nullptr, "fuzz: join");
  wire::Status status;
  recvExact(fd, &status, sizeof(status), soon(), nullptr, "fuzz: status");
  if (status.status != ternSuccess) return false;
  wire::TableHeader header;
  recvExact(fd, &header, sizeof(header), soon(), nullptr, "fuzz: table");
  if (header.nranks != 1) __builtin_trap();  // the root admitted a join that does not fit its 1-rank job
  std::vector<uint8_t> rest(sizeof(wire::PeerEntry) + kMacBytes);
  recvExact(fd, rest.data(), rest.size(), soon(), nullptr, "fuzz: table");
  return true;
}

void joinRealRootWith(fuzz::Bytes in) {
  SocketAddress root;
  Fd listener = listenOn(loopback(), &root);
  // A 1-rank job: a well-formed join completes it. The handle stops and joins the root's thread when this input
  // returns, so nothing the root holds is left for libFuzzer's per-input leak check to see.
  BootstrapRoot rootServer = BootstrapRoot::start(std::move(listener), secret(), 1, 5);
  wire::Hello hello;
  hello.nonce = freshNonce();
  const uint8_t flags = in.take<uint8_t>();
  if (flags & 1) hello.magic = in.take<uint32_t>();
  if (flags & 2) hello.version = in.take<uint32_t>();
  wire::Join join = in.take<wire::Join>();
  bool admitted = false;
  try {
    admitted = joinRealRoot(root, hello, join);
  } catch (const Error&) {
  }
  if (admitted) return;
  wire::Join good;
  good.rank = 0;
  good.nranks = 1;
  good.listener.set(root);
  wire::Hello fresh;
  fresh.nonce = freshNonce();
  try {
    if (!joinRealRoot(root, fresh, good)) __builtin_trap();  // the garbage before it must not have broken the root
  } catch (const Error&) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::setenv("TERN_SOCKET_IFNAME", "lo", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Bytes in(data, size);
  const uint8_t which = in.take<uint8_t>();
  if (which & 1) {
    joinFakeRoot(in);
  } else {
    joinRealRootWith(in);
  }
  // The listener address decoder on its own.
  wire::Address a;
  std::memcpy(&a, data, size < sizeof(a) ? size : sizeof(a));
  SocketAddress out;
  if (a.get(&out) && out.length > sizeof(out.storage)) __builtin_trap();
  return 0;
}
