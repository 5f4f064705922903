// Crash safety of the named shared-memory segments (shm_segment.hpp): nothing of a job may stay in /dev/shm once its
// ranks have failed or finished, even when one was SIGKILLed in the middle of setup.
//
// Two mechanisms, because a name must exist for a while (peers in other processes find a segment by name):
//  - the window is short: every rank of the host unlinks every peer's name (not only its own) as soon as the
//    second setup round shows that all have mapped them, so a rank that dies after that round leaves nothing;
//  - a sweeper removes the names whose creator is gone: a survivor whose setup fails sweeps its job's names
//    (waiting briefly for a peer that is still exiting), and every setup first sweeps any tern segment of this user
//    whose creator no longer exists (a job whose ranks were all killed has no survivor to clean up after it).
// A name carries its creator's pid ("/tern-<job tag>-r<rank>-p<pid>-<n>"), which is what "gone" is judged by: no
// such process, or a zombie. This assumes the ranks sharing /dev/shm share a pid namespace, which cross-memory
// attach (process_vm_readv) assumes too.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

namespace tern::shm {

// The creator pid in a tern segment name (with or without the leading slash), or -1 when name is not one.
pid_t segmentCreator(const std::string& name);
// True when pid names no live process (none, or a zombie).
bool processGone(pid_t pid);

// Unlinks every tern segment of this user in /dev/shm whose name starts with "tern-" + jobTag + "-" (every tern
// segment when jobTag is empty) and whose creator is gone. Returns how many such names remain whose creator is
// another process that is still alive.
int sweepDeadSegments(const std::string& jobTag);
// After a failed setup: sweeps jobTag's names until none of another process remains or `wait` has passed (a peer
// killed a moment ago may still be exiting; a live one unlinks its own name when its setup fails).
void sweepJobAfterFailure(const std::string& jobTag, std::chrono::milliseconds wait);

// Test hook, off unless TERN_TEST_SHM_KILL="<rank>:<step>" is set: the rank that reaches the named step of its
// shared-memory setup SIGKILLs itself there (tests/shm/setup_kill_test.sh). Steps, in order: opened (shm_open
// done, not yet sized), created (sized, mapped, header not written), announced (first round sent), mapped
// (peers' segments mapped, outcome not sent), reported (second round done, names not yet unlinked).
void setupKillPoint(int rank, const char* step);

}  // namespace tern::shm
