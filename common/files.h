// Small reads of trusted host files (sysfs, procfs, the admin's configuration).
// Files a user controls are read through agent/host/user_access.h instead.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/fd.h"
#include "common/result.h"

namespace crisp {

// The names in a directory, sorted, without dot entries; empty when it cannot be read.
std::vector<std::string> list_dir(const std::string& dir);

// Reads fd to its end or until limit bytes; errors are errno's text alone, for the caller to name
// the file. A caller that allows max bytes asks for max + 1 to tell a file that is too large.
Result<std::string> read_up_to(int fd, size_t limit);

// The whole file, at most max_bytes (larger: an error naming the file).
Result<std::string> read_text(const std::string& path, size_t max_bytes = 16u << 20);

// openat2 of path relative to dirfd ("/" first or not; "/" itself is "."), with
// O_CLOEXEC and the RESOLVE_* bits given: how files in a tree a user may have
// made (an image, a container's root) are reached without leaving it.
Fd open_at(int dirfd, const std::string& path, uint64_t flags, uint64_t resolve);

// When process pid started (field 22 of /proc/PID/stat, clock ticks after
// boot): with the pid, it names one process, whatever pid reuse brings.
Result<uint64_t> process_start_time(int pid);
// Whether process pid is exiting or gone: it runs no more code of its own.
bool process_exiting(int pid);
// Whether process pid has exited (pid 0 or less names none: never).
bool process_gone(int pid);

}  // namespace crisp
