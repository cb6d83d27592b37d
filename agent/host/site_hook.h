// Runs one of the admin's hooks (agent/site/site_config.h) for a container that has just
// started, as enroot runs its hooks.d: the hook gets enroot's variables (ENROOT_PID: the
// container's holder, ENROOT_ROOTFS: its root as /proc/PID/root, ENROOT_ENVIRON and
// ENROOT_MOUNTS: files it may append lines to) besides what the caller gives. It runs with
// the user's ids (root's only where the admin put it in root-hooks.d), in the container's
// cgroups (its memory and CPU are the container's, not crispd's), as the first process of
// a PID namespace of its own: when it ends or its time is up, everything it started ends
// with it. The two files are memfds crispd made, read back through crispd's own
// descriptors; their size and the hook's output are bounded.
// The holder is held by a pidfd (its pid and start time): its cgroups are taken only while
// it is still that process, and a hook that outlives it fails, so no hook is ever pointed at
// a process that reused its number. A root hook gets no ENROOT_ROOTFS: the root is the
// user's, and a path through /proc/PID/root follows the user's absolute symlinks on the
// host; it enters the container's namespaces through ENROOT_PID instead.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "agent/host/user_access.h"
#include "common/result.h"

namespace crisp {

struct SiteHookRun {
  std::string path;                   // the admin's program
  std::optional<UserCreds> as_user;   // nullopt: as root
  int holder_pid = 0;
  uint64_t holder_start = 0;          // process_start_time of the holder
  std::vector<std::string> env;       // enroot's variables are added
  std::chrono::milliseconds timeout{30000};
  bool in_container_cgroups = true;   // false: it stays in crispd's (unit tests)
};

// What the hook appended to ENROOT_ENVIRON and ENROOT_MOUNTS.
struct SiteHookOutput {
  std::string environ, mounts;
};

inline constexpr size_t kMaxHookFileBytes = 1 << 20;
inline constexpr size_t kMaxHookOutputBytes = 64 << 10;

// Errors (one line, naming the hook): kTimedOut when it outlived run.timeout (it and all it
// started are killed); kFailed when it exited non-zero or by a signal (the last line of its
// standard error said), when it could not start, or when a file is over kMaxHookFileBytes.
Result<SiteHookOutput> run_site_hook(const SiteHookRun& run);

}  // namespace crisp
