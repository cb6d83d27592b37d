#include "spank/task_mounts.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "common/mount_api.h"
#include "common/strings.h"

// glibc 2.36's <sys/mount.h> and <linux/mount.h> clash; the syscalls need only these.
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOVE_MOUNT_T_EMPTY_PATH
#define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif
#ifndef MS_UNBINDABLE
#define MS_UNBINDABLE (1 << 17)
#endif

namespace crisp {
namespace {

// openat2 without following any symlink: a path of the host's that the
// user cannot have redirected, or one inside an image that cannot lead out
// of the container's own directories.
Fd open_no_symlinks(int dirfd, const std::string& path, uint64_t flags) {
  open_how how{};
  how.flags = flags | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return Fd(static_cast<int>(syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof how)));
}

// The directory at path inside the container, made where missing, never
// through a symlink of the image's (root makes these directories).
Result<Fd> make_dirs(const std::string& path) {
  Fd dir = open_no_symlinks(AT_FDCWD, "/", O_PATH | O_DIRECTORY);
  for (const std::string& part : split(path, '/')) {
    if (part.empty() || !dir) continue;
    if (mkdirat(dir.get(), part.c_str(), 0755) != 0 && errno != EEXIST)
      return fail("cannot create " + part + " on the way to " + path + " in the container: " + errno_text(errno));
    dir = open_no_symlinks(dir.get(), part, O_PATH | O_DIRECTORY);
    if (!dir)
      return fail("cannot reach " + path + " in the container" +
                  (errno == ELOOP ? std::string(": the image has a symlink on the way") : ": " + errno_text(errno)));
  }
  if (!dir) return fail("cannot open the container's root: " + errno_text(errno));
  return dir;
}
}  // namespace

Result<Fd> clone_host_tree(const std::string& path) {
  // Slurm's directory, under slurmd's spool: followed through no symlink, its parent root's.
  Fd dir = open_no_symlinks(AT_FDCWD, path, O_PATH | O_DIRECTORY);
  if (!dir) return fail("cannot take " + path + " into the container: " + errno_text(errno));
  struct stat parent {};
  Fd up = open_no_symlinks(dir.get(), "..", O_PATH | O_DIRECTORY);
  if (!up || fstat(up.get(), &parent) != 0 || parent.st_uid != 0)
    return fail("cannot take " + path + " into the container: its directory is not root's");
  Fd fd(static_cast<int>(
      syscall(SYS_open_tree, dir.get(), "", OPEN_TREE_CLONE | O_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH)));
  if (!fd) return fail("cannot take " + path + " into the container: open_tree: " + errno_text(errno));
  return fd;
}

Status attach_tree(int tree_fd, const std::string& target) {
  // Every task of the step arrives here; the first attaches, the others find it
  // there. Each opens the namespace itself: a lock on a shared fd would not exclude.
  Fd lock_fd(open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC));
  if (!lock_fd) return fail("cannot open the container's mount namespace: " + errno_text(errno));
  if (flock(lock_fd.get(), LOCK_EX) != 0) return fail("flock " + target + ": " + errno_text(errno));
  struct stat want {}, have {};
  if (fstat(tree_fd, &want) != 0) return fail("fstat " + target + ": " + errno_text(errno));
  auto dir = make_dirs(target);
  if (!dir) return dir.take_error();
  if (fstat(dir->get(), &have) == 0 && have.st_dev == want.st_dev && have.st_ino == want.st_ino)
    return Ok{};  // already attached by another task
  if (syscall(SYS_move_mount, tree_fd, "", dir->get(), "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
    return fail("cannot mount " + target + " in the container: move_mount: " + errno_text(errno));
  return Ok{};  // closing lock_fd releases the lock
}

Status make_unbindable(const std::string& target, bool recursive) {
  Fd at = open_no_symlinks(AT_FDCWD, target, O_PATH);
  if (!at) return fail("cannot make " + target + " unbindable in the container: " + errno_text(errno));
  MountAttr attr{};
  attr.propagation = MS_UNBINDABLE;
  unsigned flags = AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0);
  if (syscall(SYS_mount_setattr, at.get(), "", flags, &attr, sizeof attr) != 0)
    return fail("cannot make " + target + " unbindable in the container: mount_setattr: " + errno_text(errno));
  return Ok{};
}

}  // namespace crisp
