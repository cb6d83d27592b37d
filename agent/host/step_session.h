// A step's own namespaces inside its container, as enroot gives each started
// container (Pyxis's "running container"): a user namespace of the user's that
// maps them to 0, owning a mount namespace copied from the container's and the
// private network, IPC and UTS namespaces asked (--container-unshare). A keeper
// process holds them while the step runs; the step's tasks, and steps that
// attach to it, enter them through its /proc/PID/ns.
#pragma once

#include <cstdint>
#include <string>

#include "common/fd.h"
#include "common/layout.h"
#include "common/result.h"

namespace crisp {

struct SessionRequest {
  int holder_pid = 0;        // the container's mount namespace is its
  int stepd_pid = 0;         // the keeper exits when it does
  uint32_t uid = 0, gid = 0;
  uint32_t unshare = 0;      // UnshareBits (common/layout.h)
  std::string shm_size;      // the private /dev/shm's size= (IPC)
};

struct SessionKeeper {
  int pid = 0;
  uint64_t start_time = 0;
  Fd pidfd;
};

// Starts the keeper and returns once its namespaces are ready (10 s at most).
Result<SessionKeeper> start_session(const SessionRequest& req);

// The user namespace's maps: the user is 0 inside, as under --container-remap-root.
std::string session_map(uint32_t id);

}  // namespace crisp
