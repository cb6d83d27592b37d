// A container's bind mounts given back the read-only, nosuid, nodev and noexec their
// sources have on the host, where the runtime's remount cleared them (mount_info.h says
// which runtimes, and how they are found).
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace crisp {

// In the mount namespace of the container whose holder is pid (still runc's, the holder
// not yet released to the tasks), for the mounts of bind_sources, the host paths bound
// in. Nothing is forked where nothing was cleared (runc 1.1 clears nothing).
Status keep_source_restrictions(int pid, const std::vector<std::string>& bind_sources);

}  // namespace crisp
