// The host mounts a container's spec names, under one root directory per
// container (base/key) that goes when the container does:
// - tmpfs sources of --container-mounts ("0", "1", ...): CRI has no tmpfs
//   mount type, so crispd mounts each on the host and CRI bind-mounts it in;
// - clones of what the user resolved as a mount source ("m0", "m1", ...):
//   containerd resolves a CRI mount's path again, as root, and creates it when
//   missing, so it gets a path in root's directory that cannot change meaning
//   whatever the user then does to theirs.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "agent/host/user_access.h"
#include "common/result.h"

namespace crisp {

// The path predates staged mounts: containers made then still name it.
inline constexpr const char* kMountsBase = "/run/crisp/tmpfs";

// Where crispd makes what containers need on the host, each a root-only directory of its own.
struct HostDirs {
  explicit HostDirs(const std::string& base = kMountsBase)
      : mounts(base), hca_views(base + "-hca"), rootfs_stage(base + "-rootfs"), imports(base + "-import") {}
  std::string mounts;        // each container's mount root: its tmpfs mounts and staged user sources
  std::string hca_views;     // each container's view of /sys/class/infiniband
  std::string rootfs_stage;  // where a container's root is made the user's
  std::string imports;       // crispctl import's stages
};

// Makes base (0700) and root = base/key afresh (a leftover of a crashed crispd goes first).
Status make_mount_root(const std::string& base, const std::string& root);
// A tmpfs owned by uid:gid (mode 0700) at root/INDEX; options (checked by
// check_tmpfs_options) start with the default size in tmpfs's terms ("size=4g,huge=always").
Result<std::string> make_tmpfs(const std::string& root, size_t index, uint32_t uid, uint32_t gid, const std::string& options);
// A clone (recursive, like rbind) of the mount the user resolved, at root/mINDEX. propagates:
// the container's mount is to be a slave or shared one, which the runtime allows only of a
// host mount that is shared or a slave: the clone of a shared mount is its peer already (events
// on the source reach the container), that of a private one is made shared (a private source
// has no events to pass on).
Result<std::string> stage_user_path(const std::string& root, size_t index, const UserPath& source,
                                    bool propagates = false);
// Unmounts and removes everything under root, then root.
void remove_mount_root(const std::string& root);

}  // namespace crisp
