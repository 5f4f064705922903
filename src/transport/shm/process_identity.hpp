// Who this process is, as its same-host peers need to know: a random token (equal tokens mean one address space, so
// peers that are threads of this process read each other's buffers directly), and the cookie that peers read with
// process_vm_readv to learn whether cross-memory attach (CMA) works between us.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace tern::shm {

struct ProcessIdentity {
  uint64_t token;
  uint64_t cmaCookie;
  const volatile uint64_t* cmaProbe;  // private memory holding cmaCookie
};

const ProcessIdentity& processIdentity();

// Copies bytes from address remote in process pid into local with process_vm_readv (looping over partial reads).
// Returns false (errno set) on failure, e.g. EPERM where ptrace rules forbid it or ESRCH once the peer died.
bool cmaRead(pid_t pid, void* local, uint64_t remote, size_t bytes);
// process_vm_writev of bytes from local to the address remote in process pid (the same permission as reading).
bool cmaWrite(pid_t pid, uint64_t remote, const void* local, size_t bytes);

// True if this process can read peer's probe cookie with process_vm_readv and gets the value its header announced
// (a different value would mean the pid names another process, e.g. across pid namespaces).
bool cmaProbe(pid_t pid, uint64_t probeAddr, uint64_t cookie);

// What the kernel says process pid is doing, for a rank that must know whether a peer process can still touch its
// memory: gone (no such process, or a zombie: its memory is released), stopped (by a signal or a tracer: it runs no
// instruction until resumed), or running (anything else, including sleeping).
enum class ProcessState { kRunning, kStopped, kGone };
ProcessState processState(pid_t pid);

}  // namespace tern::shm
