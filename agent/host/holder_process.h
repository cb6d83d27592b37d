// A container's holder as a pidfd: the one process that keeps its namespaces,
// ended at once when its job or step is over, before containerd's slower stop.
#pragma once

#include <cstdint>

#include "common/fd.h"
#include "common/result.h"

namespace crisp {

// A pidfd of pid, if pid is still the process that started at start_time (not
// one that reused its number).
Result<Fd> open_process(int pid, uint64_t start_time);

// SIGKILL through the pidfd, then waits (up to 5 s) until the process has exited.
void end_process(int pidfd);

}  // namespace crisp
