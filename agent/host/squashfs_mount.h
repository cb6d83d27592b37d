// A squashfs image file (Pyxis's --container-image=PATH) mounted by the kernel
// over a loop device, as a detached mount that no mount namespace shows: the
// container's root overlay takes it as its lower layer (user_rootfs.h), and it
// is unmounted, and the loop device freed (autoclear), when the last user of
// it goes: the container's mount namespace, or this mount's descriptor when
// the create fails. Nothing is left to unmount after a kill -9 of anyone.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "common/fd.h"
#include "common/result.h"

namespace crisp {

// What the image's superblock says, read from its first bytes (pure).
struct SquashfsSuperblock {
  uint64_t bytes_used = 0;
  uint32_t block_size = 0;
  uint16_t compression = 0;
};
inline constexpr size_t kSquashfsSuperblockSize = 96;
// An error saying what is wrong, for a user: not a squashfs, a version the
// kernel does not read, or truncated (the file is shorter than the filesystem).
Result<SquashfsSuperblock> parse_squashfs_superblock(const std::string& head, uint64_t file_size);

// Whether the kernel's squashfs driver may read this file for a user: only
// what no user can have written or can still change (root's, writable by root
// alone, no ACL, on a filesystem (fs_magic, statfs's f_type) whose owners mean
// that: not an overlay, whose layers are images users made, not FUSE, whose
// server says who owns what, nor a file inside an image), unless the admin trusts
// every owner. The kernel's filesystem drivers are not made to parse hostile
// images; a user's own goes nowhere near.
bool kernel_may_mount(const struct stat& st, bool has_acl, int64_t fs_magic, bool any_owner);

// file (opened by the user, a regular file) as a read-only, nosuid, nodev
// squashfs; path names it in the loop device's backing-file field (losetup -l).
Result<Fd> mount_squashfs(int file, const std::string& path);

// A small regular file of the mounted image, resolved inside it (its symlinks
// stay in it); empty when absent or not a regular file.
std::string read_image_file(int image_root, const std::string& path, size_t max_bytes);

}  // namespace crisp
