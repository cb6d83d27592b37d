// The container's root filesystem made the user's, as enroot's is: containerd
// mounts the image's layers and the container's own upper layer as an overlay
// owned by root. crispd mounts a second overlay over the same directories (the
// container's upper one, where hooks and the entrypoint wrote, as its top lower
// layer, and a new upper beside it, crisp-fs: an upper directory in use by two
// overlays is undefined behaviour), each seen through an idmapped mount that
// swaps 0 and the user's uid (and gid), and stacks it on the container's root,
// with the container's other mounts moved onto it. Every image file then looks
// like the user's, the user writes anywhere in it, and what they write lands on
// disk as root's, in the container's own snapshot directory under containerd's
// root-only snapshots, which goes with the container.
// (An overlay mount cannot be idmapped itself before Linux 7.2; its layers
// can, since 5.19.) The new overlay is nosuid and nodev, read-only when asked; the
// container's bind mounts keep the restrictions their sources have on the host.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "agent/host/user_files.h"
#include "common/fd.h"
#include "common/result.h"
#include "common/snapshot_mount.h"

namespace crisp {

// The layers of a container's root, as containerd's snapshot service gives them.
struct RootOverlay {
  std::string snapshots;           // the directory holding every layer (.../snapshots)
  std::vector<std::string> lower;  // layers, relative to it ("12/fs"), top first
  std::string upper;               // containerd's upper layer, relative to it too ("9/fs")
  std::string options;             // overlay options kept as they were ("index=off")
};

// containerd's mounts of a container's snapshot (or of a view: no upper layer
// then, when read_only); an error unless it is one overlay whose layers all lie
// in one snapshots directory (nothing is done then).
Result<RootOverlay> overlay_of_snapshot(const std::vector<SnapshotMount>& mounts, bool read_only = false);

// containerd's snapshots directory, reached through no symlink, root's alone
// (crispd makes directories and mounts in it); an error otherwise.
Status check_snapshots_dir(const std::string& dir);

// The mount points of the root's own children (/proc, /dev, binds ...) in a
// container's mountinfo, in mount order; an error when its root is no overlay.
Result<std::vector<std::string>> root_children(const std::string& mountinfo);

// The holder's mount namespace, when it is still one that only root could have
// made: owned by crispd's own user namespace. A holder (the user's process) that
// made namespaces of its own, where it may mount what it likes, is refused.
Result<Fd> runc_mount_ns(int pid);

// A user namespace whose maps swap 0 and the user's uid (gid), kept per user:
// what an idmapped mount that shows root's files as the user's follows.
Result<Fd> swapping_userns(uint32_t uid, uint32_t gid);

// Makes mount (a detached one, open_tree's clone) show its files through userns's maps.
// A system call alone: usable in a forked child.
bool idmap_mount(int mount, int userns);

// The user namespace's maps for an idmap swapping 0 and id ("0 ID 1\nID 0 1\n..."),
// every other id mapped to itself.
std::string swap_map(uint32_t id);

struct RootfsRequest {
  int pid = 0;        // the container's holder
  std::vector<SnapshotMount> snapshot;  // containerd's mounts of the container's snapshot
  UserIdentity user;  // whose files they become, and who is written into /etc/passwd
  bool readonly = false;
  std::string stage;      // a root-only directory for the child's private mounts
  std::string localtime;  // the node's /etc/localtime, copied in; empty: none
  // A squashfs image's detached mount (squashfs_mount.h), or -1: when given, it
  // replaces the image containerd mounted (the sandbox's) under the container's
  // upper layer, idmapped as the layers are.
  int image_root = -1;
  // A squashfs image the kernel must not read (squashfs_mount.h), or -1: unsquashfs
  // extracts it as the user into the container's snapshot (squashfs_tools.h), and it
  // replaces the sandbox's image as image_root would.
  int image_to_extract = -1;
  std::chrono::seconds extract_timeout{600};
  // The host paths bound into the container: what of their host mounts' read-only,
  // nosuid, nodev and noexec the runtime cleared is set again (source_restrictions.h).
  std::vector<std::string> bind_sources;
};

// Does the above as a child process (crispd's threads never change namespace),
// then, in the new root before the container's mounts are on it, writes what
// user_files.h describes, as the user's. An error of kind kUnsupported: this
// node cannot (containerd's root is not an overlay of snapshots, or their
// filesystem takes no idmap); the container is left as containerd made it.
// Then, whatever came of it, the holder leaves its undumpable start
// (holder_process.h: release_holder), for the step's tasks to join it.
Status give_rootfs_to_user(const RootfsRequest& req);

}  // namespace crisp
