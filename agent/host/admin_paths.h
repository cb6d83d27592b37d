// What crispd opens as root because the admin named it (a site mount's source): found
// by root, but only through what no user can change. Every component is walked without
// following symlinks, each owned by a system account (uid <= kSystemUidMax, as Debian's
// SYS_UID_MAX: root, munge, slurm), and each directory walked through is writable only
// by its owner or sticky, so no user can put their own file or directory in its place.
#pragma once

#include <sys/stat.h>

#include <string>

#include "agent/host/user_access.h"
#include "common/result.h"

namespace crisp {

inline constexpr uint32_t kSystemUidMax = 999;

// Whether others than the owner (its group, anyone) may write what st describes.
inline bool others_may_write(const struct stat& st) { return (st.st_mode & (S_IWGRP | S_IWOTH)) != 0; }

// path (absolute, normalized) as an O_PATH descriptor. A missing path is an error of
// kind kNotFound; one a user could change (a symlink, a user's file or directory on the
// way, a directory others may write) is kRefused, naming the component.
Result<UserPath> open_admin_path(const std::string& path);

}  // namespace crisp
