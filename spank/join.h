// Entering a step's container: the holder's mount namespace, held open from
// slurmstepd so every task joins the same one.
#pragma once

#include "common/result.h"

namespace crisp {

// Opens the holder's mount namespace and checks that pid still runs the
// holder (not a process that reused its pid). Returns a CLOEXEC fd.
Result<int> open_holder_mount_ns(int holder_pid, const char* holder_path_inside);

// setns() into it, then no_new_privs so setuid files in the image grant nothing.
Status join_mount_ns(int ns_fd);

}  // namespace crisp
