#include "spank/join.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <string>

#include "common/files.h"
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

Status write_file(const std::string& path, const std::string& text) {
  Fd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return fail("cannot open " + path + ": " + errno_text(errno));
  if (write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    return fail("cannot write " + path + ": " + errno_text(errno));
  return Ok{};
}

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

Result<Fd> open_holder_mount_ns(int holder_pid, uint64_t start_time, const char* holder_path_inside) {
  const Error gone = fail("the step's container exited before its tasks could join it");
  // A pidfd, then the start time: if they match crispd's, the pidfd is the
  // holder's, not that of a process which got its pid after it exited.
  Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, holder_pid, 0)));
  if (!pidfd) return gone;
  if (start_time != 0) {
    auto started = process_start_time(holder_pid);
    if (!started || *started != start_time) return gone;
  }
  std::string proc = "/proc/" + std::to_string(holder_pid);
  Fd fd(open((proc + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return fail("cannot open the container's mount namespace: " + errno_text(errno));
  // Still alive after the open: /proc/PID was the holder's when it was opened.
  if (syscall(SYS_pidfd_send_signal, pidfd.get(), 0, nullptr, 0) != 0) return gone;
  char exe[PATH_MAX];
  ssize_t n = readlink((proc + "/exe").c_str(), exe, sizeof exe - 1);
  if (n < 0 || std::string(exe, static_cast<size_t>(n)) != holder_path_inside)
    return fail("the step's container exited before its tasks could join it");
  return fd;
}

Result<Fd> open_process_ns(int pid, const char* name) {
  Fd fd(open(("/proc/" + std::to_string(pid) + "/ns/" + name).c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return fail("cannot open the step's " + std::string(name) + " namespace: " + errno_text(errno));
  return fd;
}

Status enter_ns(int ns_fd, const char* what) {
  if (setns(ns_fd, 0) != 0) return fail("cannot enter the step's " + std::string(what) + " namespace: setns: " + errno_text(errno));
  return Ok{};
}

Status join_mount_ns(int ns_fd) {
  if (setns(ns_fd, CLONE_NEWNS) != 0) return fail("cannot enter the container: setns: " + errno_text(errno));
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail("prctl(PR_SET_NO_NEW_PRIVS): " + errno_text(errno));
  return Ok{};
}

}  // namespace crisp

namespace crisp {

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

namespace {

// Keeps the task non-dumpable however the remap ends: until it execs, it
// holds slurmstepd's memory, which a process of the user's may not read.
struct NotDumpableAfter {
  ~NotDumpableAfter() { (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }
};

}  // namespace

Status remap_to_root(uint32_t uid, uint32_t gid) {
  // slurmstepd's setuid left the task non-dumpable, so its /proc files are
  // root's and it could not write its own maps: dumpable only while it does.
  NotDumpableAfter restore;
  if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) return fail("prctl(PR_SET_DUMPABLE): " + errno_text(errno));
  if (unshare(CLONE_NEWUSER) != 0)
    return fail("--container-remap-root needs unprivileged user namespaces, which this node does not allow (" +
                errno_text(errno) + "); run without it or ask your administrator");
  if (auto s = write_file("/proc/self/setgroups", "deny"); !s) return s;
  if (auto s = write_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1\n"); !s) return s;
  return write_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1\n");
}

}  // namespace crisp
