// Debian's squashfs-tools run with a user's ids on what crispd opened for them:
// unsquashfs for an image file the kernel must not parse (squashfs_mount.h),
// mksquashfs for --container-save. Neither runs with any right the user lacks.
#pragma once

#include <chrono>
#include <string>

#include "agent/host/user_access.h"
#include "agent/host/work_cgroup.h"
#include "common/result.h"

namespace crisp {

inline constexpr const char* kUnsquashfs = "/usr/bin/unsquashfs";
inline constexpr const char* kMksquashfs = "/usr/bin/mksquashfs";

// Extracts image (a squashfs the user opened) into dir, a root-owned directory,
// as the user, through an idmapped view of dir (userns: swapping_userns) that
// shows it as theirs: what lands on disk is root's, as in the image's layers.
Status unsquash_as_user(const UserCreds& creds, int image, const std::string& dir, int userns,
                        std::chrono::seconds timeout);

// A small file of image (path inside it), read as the user; empty when the
// image has none (a squashfs not made by enroot).
std::string cat_as_user(const UserCreds& creds, int image, const std::string& path, size_t max_bytes,
                        std::chrono::seconds timeout);

// How a mksquashfs runs: in crisp's bounded cgroup (work_cgroup.h), with as
// many threads as its CPU share and caches within half its memory.
struct SquashfsBounds {
  std::chrono::seconds timeout{1800};
  const WorkCgroup* cgroup = nullptr;  // null or empty: in crispd's own
  WorkLimits limits;
};

// Writes the root filesystem of the container whose mount namespace is
// container_ns (its root alone, none of the mounts on it) as a squashfs to out
// (a file the user opened for writing), as the user: every file root's in the
// image, /dev empty, as enroot's export does. mksquashfs is the node's.
Status mksquash_as_user(const UserCreds& creds, int container_ns, int out, const SquashfsBounds& bounds);

// An image's layers as containerd holds them, with crispd's own files on top.
struct LayerTree {
  std::string layers_dir;          // containerd's snapshots directory
  std::vector<std::string> lower;  // layers relative to it ("12/fs"), top first
  std::string top;                 // a root-owned directory of crispd's laid over them (enroot's /etc files)
  std::string mount_at;            // an empty root-only directory, mounted on only in the child's namespace
};

// Writes tree as a squashfs to out (a file the user opened for writing), as
// root, with every file root's: from a read-only overlay of the layers mounted
// in the child's own mount namespace, which no other process can see or change
// while it reads (image layers are never written once committed).
Status mksquash_layers(const LayerTree& tree, int out, const SquashfsBounds& bounds);

}  // namespace crisp
