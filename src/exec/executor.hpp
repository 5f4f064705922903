// Runs one rank's Schedule over a Transport: starts every step as soon as its dependencies have completed (and,
// for transfers, as soon as the earlier transfers to/from the same peer were posted, so FIFO matching holds),
// has the compute backend perform the local steps (reduce, copy, finalize, encode, decode, cast) on the calling
// thread, and drives the transport in between. Buffers are typed references (base/memory.hpp): before anything
// runs, every span of the schedule is checked against its buffer's size, and the buffers' memory kinds against
// what the transport carries and the backend runs on, so a mismatch is a clear error and never a stray access.
// Waiting never spins: when nothing can advance the transport sleeps in poll/condvar; every wait checks the
// deadline and the abort flag.
#pragma once

#include <atomic>
#include <chrono>

#include "base/memory.hpp"
#include "base/socket.hpp"
#include "exec/compute_backend.hpp"
#include "exec/schedule.hpp"
#include "transport/transport.hpp"

namespace tern {

namespace compress {
class Codec;
class ErrorFeedback;
}  // namespace compress

// The call's three buffers, each with its size in bytes and its memory kind.
struct ExecBuffers {
  ConstMemRef input;
  MemRef output;
  MemRef scratch;
};

struct ExecContext {
  Transport* transport = nullptr;
  const ComputeBackend* compute = nullptr;  // runs the local steps; nullptr: cpuBackend()
  ternDataType_t dtype = ternFloat32;
  ternRedOp_t op = ternSum;
  int nranks = 1;  // divisor of avg
  int rank = 0;    // for messages
  Clock::time_point deadline;
  const std::atomic<bool>* abortFlag = nullptr;
  const char* what = "collective";  // for messages ("allreduce", ...)
  // Compressed collectives: the codec, error-feedback states (worker, server) and RNG keys; the input dtype that
  // kEncode reads and the output dtype kCast writes (ctx.dtype is then fp32, the accumulation type).
  const compress::Codec* codec = nullptr;
  compress::ErrorFeedback* feedback[2] = {nullptr, nullptr};
  uint64_t seed = 0;
  uint64_t step = 0;
  ternDataType_t inputDtype = ternFloat32;
  ternDataType_t outputDtype = ternFloat32;
};

void executeSchedule(const Schedule& schedule, const ExecBuffers& buffers, const ExecContext& ctx);

}  // namespace tern
