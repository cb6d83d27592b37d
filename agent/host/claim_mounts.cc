#include "agent/host/claim_mounts.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "agent/host/child_steps.h"
#include "agent/host/holder_process.h"
#include "agent/host/light_child.h"
#include "agent/host/mount_info.h"
#include "common/fd.h"
#include "common/files.h"
#include "common/mount_api.h"
#include "common/strings.h"

namespace crisp {
namespace {

// Kernel work on the container's own directories: seconds would mean something is wrong.
constexpr std::chrono::seconds kChildTimeout{10};
// Each item's steps in the child's answer: (item + 1) * kStride + what failed.
constexpr int kStride = 4;
enum ItemStep { kMakePoint = 1, kAttach = 2, kMakeNode = 3 };

// All the child needs, made before it: it shares crispd's memory and may not allocate.
struct Prepared {
  const AttachRequest& req;
  int pidfd = -1;
  std::vector<Fd> trees;  // mounts' detached clones
  std::vector<bool> is_dir;
  std::vector<std::vector<std::string>> mount_parts, device_parts;  // targets' path components
  std::vector<struct stat> nodes;  // devices' host files
};

std::vector<std::string> parts_of(const std::string& path) {
  std::vector<std::string> out;
  for (const std::string& p : split(path, '/'))
    if (!p.empty() && p != ".") out.push_back(p);
  return out;
}

// name (one component) in dir, reached through no symlink.
Fd open_beneath(int dir, const std::string& name, uint64_t flags) {
  open_how how{};
  how.flags = flags | O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH;
  return Fd(static_cast<int>(syscall(SYS_openat2, dir, name.c_str(), &how, sizeof how)));
}

// mkdirat, then the owner the root's own files show, where dir is on the root's filesystem.
bool make_dir(const Prepared& p, int dir, dev_t root_dev, const std::string& name) {
  struct stat st {};
  if (mkdirat(dir, name.c_str(), 0755) != 0) return errno == EEXIST;
  if (!p.req.root_owner || fstat(dir, &st) != 0 || st.st_dev != root_dev) return true;
  return fchownat(dir, name.c_str(), p.req.root_owner->first, p.req.root_owner->second, AT_SYMLINK_NOFOLLOW) == 0;
}

// The directory holding path's last part (made as needed), and that part; .. is refused.
Fd parent_of(const Prepared& p, int root, dev_t root_dev, const std::vector<std::string>& parts) {
  Fd dir(fcntl(root, F_DUPFD_CLOEXEC, 0));
  for (size_t i = 0; dir && i + 1 < parts.size(); ++i) {
    if (parts[i] == "..") return Fd();
    Fd next = open_beneath(dir.get(), parts[i], O_DIRECTORY);
    if (!next && errno == ENOENT && make_dir(p, dir.get(), root_dev, parts[i]))
      next = open_beneath(dir.get(), parts[i], O_DIRECTORY);
    dir = std::move(next);
  }
  return dir;
}

Fd mount_point(const Prepared& p, int root, dev_t root_dev, const std::vector<std::string>& parts, bool is_dir) {
  if (parts.empty() || parts.back() == "..") return Fd();
  Fd dir = parent_of(p, root, root_dev, parts);
  if (!dir) return dir;
  const std::string& name = parts.back();
  if (is_dir) {
    if (!make_dir(p, dir.get(), root_dev, name)) return Fd();
  } else if (Fd made(openat(dir.get(), name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0755)); made) {
    struct stat st {};
    if (p.req.root_owner && fstat(dir.get(), &st) == 0 && st.st_dev == root_dev &&
        fchown(made.get(), p.req.root_owner->first, p.req.root_owner->second) != 0)
      return Fd();
  } else if (errno != EEXIST) {
    return Fd();
  }
  return open_beneath(dir.get(), name, is_dir ? O_DIRECTORY : 0);
}

bool make_node(const Prepared& p, int root, dev_t root_dev, const std::vector<std::string>& parts,
               const struct stat& host) {
  if (parts.empty() || parts.back() == "..") return false;
  Fd dir = parent_of(p, root, root_dev, parts);
  const char* name = parts.back().c_str();
  return dir && mknodat(dir.get(), name, host.st_mode & (S_IFMT | 07777), host.st_rdev) == 0 &&
         fchownat(dir.get(), name, host.st_uid, host.st_gid, AT_SYMLINK_NOFOLLOW) == 0;
}

// In the child: into the container's mount namespace, then each mount and device in turn.
int child_steps(const Prepared& p) {
  umask(0);
  if (setns(p.pidfd, CLONE_NEWNS) != 0 || chdir("/") != 0) return 1;
  Fd root(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  struct stat root_st {};
  if (!root || fstat(root.get(), &root_st) != 0) return 1;
  for (size_t i = 0; i < p.trees.size(); ++i) {
    int step = static_cast<int>(i + 1) * kStride;
    Fd at = mount_point(p, root.get(), root_st.st_dev, p.mount_parts[i], p.is_dir[i]);
    if (!at) return step + kMakePoint;
    if (syscall(SYS_move_mount, p.trees[i].get(), "", at.get(), "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
      return step + kAttach;
  }
  for (size_t i = 0; i < p.nodes.size(); ++i)
    if (!make_node(p, root.get(), root_st.st_dev, p.device_parts[i], p.nodes[i]))
      return static_cast<int>(p.trees.size() + i + 1) * kStride + kMakeNode;
  return 0;
}

Status prepare(Prepared& p) {
  for (const AttachMount& m : p.req.mounts) {
    Fd tree(static_cast<int>(
        syscall(SYS_open_tree, AT_FDCWD, m.host_path.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE)));
    if (!tree) return fail("cannot clone " + m.host_path + " for the container: " + errno_text(errno));
    MountAttr ro{MOUNT_ATTR_RDONLY, 0, 0, 0};
    if (m.readonly && syscall(SYS_mount_setattr, tree.get(), "", AT_EMPTY_PATH, &ro, sizeof ro) != 0)
      return fail("cannot make " + m.host_path + " read-only for the container: " + errno_text(errno));
    struct stat st {};
    if (fstat(tree.get(), &st) != 0) return fail("fstat " + m.host_path + ": " + errno_text(errno));
    p.is_dir.push_back(S_ISDIR(st.st_mode));
    p.trees.push_back(std::move(tree));
    p.mount_parts.push_back(parts_of(m.target));
  }
  for (const AttachDevice& d : p.req.devices) {
    struct stat st {};
    if (stat(d.host_path.c_str(), &st) != 0) return fail("device " + d.host_path + ": " + errno_text(errno));
    if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)) return fail(d.host_path + " is not a device");
    p.nodes.push_back(st);
    p.device_parts.push_back(parts_of(d.target));
  }
  return Ok{};
}

// Whether every mount point and device node is made where no lookup can block (the spare's
// mounts are crispd's and runc's: the user has run nothing in it yet).
bool walks_local_mounts(const Prepared& p) {
  auto mountinfo = read_text("/proc/" + std::to_string(p.req.holder_pid) + "/mountinfo", 1u << 20);
  if (!mountinfo) return false;
  std::vector<std::string> paths;
  for (const auto& parts : p.mount_parts) paths.push_back("/" + join(parts, "/"));
  for (const auto& parts : p.device_parts) paths.push_back("/" + join(parts, "/"));
  return made_on_local_mounts(parse_mountinfo(*mountinfo), paths);
}

// Without a copy of crispd (light_child.h), waited for whole: its lookups cannot block. It
// shares crispd's descriptors, so its exit closes (FLUSHes) none of them.
Result<ChildAnswer> run_light(const Prepared& p) {
  int err = 0;
  auto step = run_light_child(
      [&] {
        int failed = child_steps(p);
        err = errno;
        return failed;
      },
      kChildTimeout, Files::kShared);
  if (!step) return fail("the process attaching the step's mounts " + step.error());
  return ChildAnswer{*step, err};
}

// A forked child, abandoned at the deadline: a lookup on a mount the step brings may block.
Result<ChildAnswer> run_forked(const Prepared& p) {
  auto answer = run_child_steps([&] { return child_steps(p); }, static_cast<int>(kChildTimeout.count() * 1000));
  if (!answer) return fail("the process attaching the step's mounts died or hung");
  return answer;
}

}  // namespace

Status attach_in_container(const AttachRequest& req) {
  auto holder = open_process(req.holder_pid, req.holder_start);
  if (!holder) return fail("the container's holder is gone: " + holder.error());
  Prepared p{req, holder->get(), {}, {}, {}, {}, {}};
  if (auto s = prepare(p); !s) return s;
  auto answer = walks_local_mounts(p) ? run_light(p) : run_forked(p);
  if (!answer) return answer.take_error();
  if (answer->step == 0) return Ok{};
  if (answer->step < kStride) return fail("cannot enter the container's mount namespace: " + errno_text(answer->err));
  size_t item = static_cast<size_t>(answer->step / kStride - 1);
  int what = answer->step % kStride;
  std::string target = item < req.mounts.size() ? req.mounts[item].target
                       : item - req.mounts.size() < req.devices.size() ? req.devices[item - req.mounts.size()].target
                                                                         : "?";
  const char* verb = what == kMakePoint ? "make the mount point " : what == kAttach ? "mount " : "make the device ";
  return fail(std::string("cannot ") + verb + target + " in the container: " + errno_text(answer->err));
}

}  // namespace crisp
