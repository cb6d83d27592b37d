#include "agent/host/host_mounts.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "common/fd.h"
#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"

namespace crisp {

Status make_mount_root(const std::string& base, const std::string& root) {
  if (mkdir(base.c_str(), 0700) != 0 && errno != EEXIST) return fail("cannot create " + base + ": " + errno_text(errno));
  remove_mount_root(root);
  if (mkdir(root.c_str(), 0700) != 0) return fail("cannot create " + root + ": " + errno_text(errno));
  return Ok{};
}

Result<std::string> make_tmpfs(const std::string& root, size_t index, uint32_t uid, uint32_t gid, const std::string& options) {
  std::string dir = root + "/" + std::to_string(index);
  // tmpfs takes the last of a repeated option: the owner is always the user.
  std::string opts = "mode=0700," + options + ",uid=" + std::to_string(uid) + ",gid=" + std::to_string(gid);
  if (mkdir(dir.c_str(), 0700) != 0 || mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0)
    return fail("cannot make a tmpfs for --container-mounts: " + errno_text(errno));
  return dir;
}

Result<std::string> stage_user_path(const std::string& root, size_t index, const UserPath& source, bool propagates) {
  std::string at = root + "/m" + std::to_string(index);
  // A mount point of the source's kind: a directory, or an empty file.
  if (source.is_directory ? mkdir(at.c_str(), 0700) != 0
                          : Fd(open(at.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)).get() < 0)
    return fail("cannot create " + at + ": " + errno_text(errno));
  Fd tree(static_cast<int>(syscall(SYS_open_tree, source.fd.get(), "",
                                   OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE)));
  if (!tree) return fail("cannot clone the mount of " + source.path + ": open_tree: " + errno_text(errno));
  if (syscall(SYS_move_mount, tree.get(), "", AT_FDCWD, at.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0)
    return fail("cannot place the mount of " + source.path + ": move_mount: " + errno_text(errno));
  if (propagates && mount(nullptr, at.c_str(), nullptr, MS_REC | MS_SHARED, nullptr) != 0)
    return fail("cannot make the mount of " + source.path + " shared: " + errno_text(errno));
  return at;
}

void remove_mount_root(const std::string& root) {
  struct stat st {};
  if (lstat(root.c_str(), &st) != 0) return;
  for (const std::string& name : list_dir(root)) {
    std::string path = root + "/" + name;
    if (umount2(path.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0 && errno != EINVAL)
      log_warn("umount " + path + ": " + errno_text(errno));
    if (rmdir(path.c_str()) != 0 && !(errno == ENOTDIR && unlink(path.c_str()) == 0))
      log_warn("removing " + path + ": " + errno_text(errno));
  }
  if (rmdir(root.c_str()) != 0) log_warn("rmdir " + root + ": " + errno_text(errno));
}

}  // namespace crisp
