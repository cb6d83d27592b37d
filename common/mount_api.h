// The new mount API's structure and flags that glibc 2.36's <sys/mount.h> lacks
// (open_tree, move_mount and mount_setattr are called through syscall()).
#pragma once

#include <cstdint>

#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#endif
#ifndef MOUNT_ATTR_NOSUID
#define MOUNT_ATTR_NOSUID 0x00000002
#endif
#ifndef MOUNT_ATTR_NODEV
#define MOUNT_ATTR_NODEV 0x00000004
#endif
#ifndef MOUNT_ATTR_NOEXEC
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif
#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif

namespace crisp {

struct MountAttr {  // linux/mount.h's struct mount_attr
  uint64_t attr_set, attr_clr, propagation, userns_fd;
};

}  // namespace crisp
