// Debian's squashfs-tools run with a user's ids on what crispd opened for them:
// unsquashfs for an image file the kernel must not parse (squashfs_mount.h),
// mksquashfs for --container-save. Neither runs with any right the user lacks.
#pragma once

#include <chrono>
#include <string>

#include "agent/host/user_access.h"
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

// Writes the root filesystem of the container whose mount namespace is
// container_ns (its root alone, none of the mounts on it) as a squashfs to out
// (a file the user opened for writing), as the user: every file root's in the
// image, /dev empty, as enroot's export does. mksquashfs is the node's.
Status mksquash_as_user(const UserCreds& creds, int container_ns, int out, std::chrono::seconds timeout);

}  // namespace crisp
