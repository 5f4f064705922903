// How long waits on same-host peers spin before they sleep (see flag_wait.hpp), chosen once per communicator from
// the number of ranks on this host and the CPUs this process may run on.
#pragma once

#include "transport/shm/flag_wait.hpp"

namespace tern::shm {

SpinPolicy chooseSpinPolicy(int localRanks);

}  // namespace tern::shm
