#include "transport/shm/futex.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

namespace tern::shm {

void futexWait(const std::atomic<uint32_t>* word, uint32_t expected, int timeoutUs) {
  timespec ts{timeoutUs / 1000000, static_cast<long>(timeoutUs % 1000000) * 1000};
  // EAGAIN (the word changed), EINTR and ETIMEDOUT all mean "look again": the caller re-checks its condition.
  ::syscall(SYS_futex, const_cast<std::atomic<uint32_t>*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futexWakeAll(const std::atomic<uint32_t>* word) {
  ::syscall(SYS_futex, const_cast<std::atomic<uint32_t>*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace tern::shm
