// How fast this host's kernel copies memory between address spaces (process_vm_readv, the copy behind the CMA
// forms) against a user-space memcpy of the same bytes, measured once per process at shared-memory setup.
//
// Why: a CMA form trades the staged forms' two user-space copies (into the shared segment and out of it) for one
// kernel copy that pins the peer's pages first. Where the kernel copy runs at under half of memcpy's rate (a
// virtual machine whose page walks are costly), it cannot win, and a trial on the first calls of each size would
// only cost a short run time; above that, only a trial can tell (cma_learner.hpp).
#pragma once

namespace tern::shm {

// Below this fraction of memcpy's rate, one kernel copy takes longer than two user-space copies: staging wins
// without a trial.
inline constexpr double kSlowKernelCopyRatio = 0.5;

// process_vm_readv's rate from this process's own memory divided by memcpy's (best of a few 256 KiB copies, both
// buffers touched first). Measured on the first call (well under a millisecond), cached for the process's lifetime;
// 0 when process_vm_readv fails (CMA is then unusable anyway). TERN_SHM_KERNEL_COPY_RATIO replaces the measurement
// (tests, or a host whose measurement misleads).
double kernelCopyRatio();

// kernelCopyRatio() > 0 and below kSlowKernelCopyRatio.
bool kernelCopiesSlow();

}  // namespace tern::shm
