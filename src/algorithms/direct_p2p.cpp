// Point-to-point groups (ternGroupStart/End): every send and receive of the group is posted at once, with no
// dependencies, so a rank may send to and receive from the same peer in any order without deadlock. Messages to
// one peer keep their issue order (the k-th send matches the peer's k-th receive from this rank). Sends to self are
// matched in order with receives from self and become local copies, since a transport has no connection to self.
#include "algorithms/program.hpp"
#include "algorithms/registry.hpp"
#include "base/error.hpp"

namespace tern {

Schedule buildDirectPointToPoint(const CollArgs& args, int rank, int nranks, const BuildOptions&) {
  algo::Program program("direct", args, rank, nranks);
  std::vector<Span> selfSends, selfRecvs;
  for (const PointToPoint& p : args.p2p) {
    if (p.peer < 0 || p.peer >= nranks) throwError(ternInvalidArgument, "point-to-point peer %d out of range", p.peer);
    const Span s = p.isSend ? Span{BufferId::kInput, p.offset, p.bytes} : Span{BufferId::kOutput, p.offset, p.bytes};
    if (p.peer == rank) {
      (p.isSend ? selfSends : selfRecvs).push_back(s);
    } else if (p.isSend) {
      program.send(p.peer, s);
    } else {
      program.recv(p.peer, s);
    }
  }
  if (selfSends.size() != selfRecvs.size()) {
    throwError(ternInvalidUsage, "rank %d: %zu sends to itself but %zu receives from itself in one group", rank,
               selfSends.size(), selfRecvs.size());
  }
  for (size_t k = 0; k < selfSends.size(); ++k) {
    if (selfSends[k].bytes != selfRecvs[k].bytes) {
      throwError(ternInvalidUsage, "rank %d: send to itself of %zu bytes matched with a receive of %zu", rank,
                 selfSends[k].bytes, selfRecvs[k].bytes);
    }
    program.copy(selfRecvs[k], selfSends[k]);
  }
  return program.take();
}

}  // namespace tern
