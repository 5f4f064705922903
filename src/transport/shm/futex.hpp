// futex(2) on 32-bit words in shared memory, and the publish side of the flag protocol.
//
// Flags are counters that one rank advances and other ranks wait on (possibly in other processes, so the futexes
// are the shared kind, keyed by the shared page rather than by the address: ranks that are threads of one process
// map a peer's segment at a different address than the peer does, and still meet on the same futex).
//
// Wake-ups cost a system call, so the waker makes one only when a waiter has registered. The protocol is Dekker's:
// the waiter increments the owner's waiter count, then re-reads the flag before sleeping; the waker stores the flag,
// then reads the waiter count; both sides use sequentially consistent operations, so at least one of them sees the
// other's write and a wake-up is never lost.
#pragma once

#include <atomic>
#include <cstdint>

namespace tern::shm {

// Sleeps while *word == expected, at most timeoutUs microseconds (returns early on a wake-up, a signal, or when the
// word already differs).
void futexWait(const std::atomic<uint32_t>* word, uint32_t expected, int timeoutUs);
void futexWakeAll(const std::atomic<uint32_t>* word);

// Tells the CPU we are spinning (frees pipeline resources for a hyper-thread sibling, saves power).
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Counters wrap around; "reached" compares within half the range, which is far more than ranks ever drift apart.
inline bool reached(uint32_t value, uint32_t target) { return static_cast<int32_t>(value - target) >= 0; }

// Sets a flag and wakes its sleepers, if any registered in waiters (the owner's waiter count).
inline void publish(std::atomic<uint32_t>& word, uint32_t value, const std::atomic<uint32_t>& waiters) {
  word.store(value, std::memory_order_seq_cst);
  if (waiters.load(std::memory_order_seq_cst) != 0) futexWakeAll(&word);
}

// Increments a doorbell word and wakes its sleepers, if any registered.
inline void ring(std::atomic<uint32_t>& word, const std::atomic<uint32_t>& waiters) {
  word.fetch_add(1, std::memory_order_seq_cst);
  if (waiters.load(std::memory_order_seq_cst) != 0) futexWakeAll(&word);
}

}  // namespace tern::shm
