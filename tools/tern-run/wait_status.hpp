// How a rank ended, in words and as the exit code tern-run passes on.
#pragma once

#include <string>

namespace tern::run {

// True when a wait status counts as a failure of the job: a non-zero exit or death by a signal.
bool IsFailure(int wait_status);

// "exited with code 3", "killed by signal 9 (Killed)", "killed by signal 11 (Segmentation fault, core dumped)".
std::string DescribeWaitStatus(int wait_status);

// The code a shell would report: the exit code, or 128+signal.
int ExitCodeFor(int wait_status);

}  // namespace tern::run
