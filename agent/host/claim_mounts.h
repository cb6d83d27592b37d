// A claimed spare container given what its step needs, after it was made: the
// step's mounts (cloned on the host, attached inside) and device nodes (made
// inside as runc makes them), from a child in the container's mount namespace.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace crisp {

struct AttachMount {
  std::string host_path, target;  // a host path crispd trusts (staged, the admin's, Slurm's)
  bool readonly = false;
};

struct AttachDevice {
  std::string host_path, target;
};

struct AttachRequest {
  int holder_pid = 0;
  uint64_t holder_start = 0;  // process_start_time: the holder itself, never a pid's reuse
  std::vector<AttachMount> mounts;  // in order: a later one may lie under an earlier one
  std::vector<AttachDevice> devices;
  // The root's owner as the container shows it: the mount points made in the root
  // (not in /dev or another mount) get these ids, as those runc makes do once the
  // root is the user's (user_rootfs.h). Unset: root's.
  std::optional<std::pair<uint32_t, uint32_t>> root_owner;
};

// Mount points are reached and made through no symlink of the image's: where
// its paths hold one, an error (the caller then makes a container for the step instead).
Status attach_in_container(const AttachRequest& req);

}  // namespace crisp
