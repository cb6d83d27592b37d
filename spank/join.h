// Entering a step's container: its namespaces (the holder's mount namespace,
// or the step's keeper's with those the response names), held open from
// slurmstepd so every task joins the same ones.
#pragma once

#include <cstdint>

#include "common/fd.h"
#include "common/result.h"

namespace crisp {

// Opens the holder's mount namespace. Its pid and start time (as crispd read
// them) name the holder alone, never a process that got its pid after it
// exited; start_time 0 (an older crispd): only its executable is checked.
Result<Fd> open_holder_mount_ns(int holder_pid, uint64_t start_time, const char* holder_path_inside);

// setns() into it, then no_new_privs so setuid files in the image grant nothing.
Status join_mount_ns(int ns_fd);

// /proc/PID/ns/NAME of a step's namespace keeper; open it before open_holder_mount_ns
// of the same pid, whose check of the process then covers this descriptor too.
Result<Fd> open_process_ns(int pid, const char* name);
// setns() into one (what: "network", "user", ... for the message).
Status enter_ns(int ns_fd, const char* what);

}  // namespace crisp
