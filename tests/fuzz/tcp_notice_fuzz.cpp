// The TCP control connection's notice decoder (tcp_wire::checkNotice, src/transport/tcp/tcp_transport.cpp): the
// fixed-size "rank R lost, detected by rank S" / ping / pong frames a peer sends. The fuzzer's bytes are the job
// size, the connection's peer and then one notice as it would arrive. A notice the decoder accepts must be safe to
// use as the transport uses it: a known kind, the sender it claims to be, ranks in range, a terminated text.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fuzz_util.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace wire = tern::tcp_wire;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tern::fuzz::Bytes in(data, size);
  const int nranks = 1 + static_cast<int>(in.take<uint8_t>());
  const int from = static_cast<int>(in.take<uint8_t>()) % nranks;
  wire::Notice notice = in.take<wire::Notice>();
  std::string why;
  if (!wire::checkNotice(notice, from, nranks, &why)) {
    if (why.empty()) std::abort();  // a refusal always says why
    return 0;
  }
  const bool kindKnown =
      notice.kind == wire::kNoticePing || notice.kind == wire::kNoticePong || notice.kind == wire::kNoticeFailed;
  if (!kindKnown || notice.from != from) std::abort();
  if (notice.kind == wire::kNoticeFailed &&
      (notice.lost < -1 || notice.lost >= nranks || notice.detector < 0 || notice.detector >= nranks)) {
    std::abort();
  }
  if (std::memchr(notice.text, '\0', sizeof(notice.text)) == nullptr) std::abort();
  return 0;
}
