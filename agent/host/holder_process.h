// A container's holder as a pidfd: the one process that keeps its namespaces,
// ended at once when its job or step is over, before containerd's slower stop.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "common/fd.h"
#include "common/result.h"

namespace crisp {

// A pidfd of pid, if pid is still the process that started at start_time (not
// one that reused its number).
Result<Fd> open_process(int pid, uint64_t start_time);

// Tells a holder its root is the user's (SIGURG, crisp-holder.c): it leaves the
// undumpable state it started in, so the step's tasks may join it; returns once
// it has (its /proc entry is the user's again), or an error after timeout.
// uid 0's holder (root's job) needs no word: Ok at once.
Status release_holder(int pid, uint32_t uid, std::chrono::milliseconds timeout = std::chrono::seconds(5));

// The cgroup.procs files of pid's cgroups, in every hierarchy crispd sees, open for writing:
// a process crispd starts for a container goes where the container is.
std::vector<Fd> cgroup_procs_of(int pid);

// SIGKILL through the pidfd, then waits (up to 5 s) until the process has exited.
void end_process(int pidfd);

}  // namespace crisp
