// Entering a step's container: the holder's mount namespace, held open from
// slurmstepd so every task joins the same one.
#pragma once

#include <cstdint>
#include <string>

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

namespace crisp {

// A host directory carried into the container after it was made (PMIx's
// server directory appears only once slurmstepd forks the tasks): cloned in
// the host's mount namespace, then attached at the same path once inside.
Result<Fd> clone_host_tree(const std::string& path);
Status attach_tree(int tree_fd, const std::string& target);

// The mount at target inside the container made unbindable (CRI has no such
// propagation); recursive: the mounts under it too. Reached through no symlink.
Status make_unbindable(const std::string& target, bool recursive);

// --container-remap-root: an unprivileged user namespace mapping the user to 0.
Status remap_to_root(uint32_t uid, uint32_t gid);

}  // namespace crisp
