#include "agent/host/user_rootfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <memory>
#include <set>
#include <thread>

#include "agent/host/child_steps.h"
#include "agent/host/holder_process.h"
#include "agent/host/mount_info.h"
#include "agent/host/source_restrictions.h"
#include "agent/host/squashfs_tools.h"
#include "common/fd.h"
#include "common/files.h"
#include "common/mount_api.h"
#include "common/strings.h"

namespace crisp {
namespace {

// A layer directory as a path relative to snapshots: "ID/fs".
Result<std::string> relative_layer(const std::string& snapshots, const std::string& path) {
  std::string prefix = snapshots + "/";
  if (path.compare(0, prefix.size(), prefix) != 0 || path.find("..") != std::string::npos || path.find(',') != std::string::npos)
    return fail("layer " + path + " is not in " + snapshots);
  return path.substr(prefix.size());
}

std::string parent_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

Status parse_super_options(const std::vector<std::string>& options, bool read_only, RootOverlay& out) {
  std::string upper, work;
  std::vector<std::string> lower;
  for (const std::string& o : options) {
    size_t eq = o.find('=');
    std::string key = o.substr(0, eq), value = eq == std::string::npos ? "" : o.substr(eq + 1);
    if (key == "lowerdir") lower = split(value, ':');
    else if (key == "upperdir") upper = value;
    else if (key == "workdir") work = value;
    // containerd's own choices, kept; anything else is left to the kernel's defaults.
    else if (key == "index" || key == "xino" || key == "redirect_dir" || key == "metacopy" || key == "userxattr")
      out.options += (out.options.empty() ? "" : ",") + o;
  }
  if (lower.empty() || (!read_only && (upper.empty() || work.empty())))
    return fail("the container's root is not an overlay with an upper layer");
  out.snapshots = parent_of(parent_of(read_only ? lower.front() : upper));
  if (!read_only) {
    auto rel = relative_layer(out.snapshots, upper);
    if (!rel) return rel.take_error();
    out.upper = *rel;
    if (auto w = relative_layer(out.snapshots, work); !w) return w.take_error();
  }
  for (const std::string& path : lower) {
    auto rel = relative_layer(out.snapshots, path);
    if (!rel) return rel.take_error();
    out.lower.push_back(*rel);
  }
  return Ok{};
}

}  // namespace

Result<RootOverlay> overlay_of_snapshot(const std::vector<SnapshotMount>& mounts, bool read_only) {
  if (mounts.size() == 1 && mounts[0].type == "bind" && read_only) {
    // A view of a one-layer image: the layer itself.
    RootOverlay out;
    out.snapshots = parent_of(parent_of(mounts[0].source));
    auto rel = relative_layer(out.snapshots, mounts[0].source);
    if (!rel) return rel.take_error();
    out.lower.push_back(*rel);
    return out;
  }
  if (mounts.size() != 1 || mounts[0].type != "overlay")
    return fail("containerd's snapshot is not one overlay mount (" + std::to_string(mounts.size()) + " mounts)");
  RootOverlay out;
  if (auto s = parse_super_options(mounts[0].options, read_only, out); !s) return s.take_error();
  return out;
}

Result<std::vector<std::string>> root_children(const std::string& mountinfo) {
  std::vector<MountInfoLine> lines = parse_mountinfo(mountinfo);
  const MountInfoLine* root = nullptr;
  for (const MountInfoLine& l : lines)
    if (l.mount_point == "/") root = &l;  // the last one: mounts stack
  if (!root) return fail("the container has no root mount");
  if (root->fstype != "overlay") return fail("the container's root is " + root->fstype + ", not an overlay");
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const MountInfoLine& l : lines)
    if (l.parent == root->id && l.mount_point != "/" && seen.insert(l.mount_point).second) out.push_back(l.mount_point);
  return out;
}

Result<Fd> runc_mount_ns(int pid) {
  std::string proc = "/proc/" + std::to_string(pid);
  Fd ns(open((proc + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns) return fail("cannot open the container's mount namespace: " + errno_text(errno));
  Fd owner(ioctl(ns.get(), NS_GET_USERNS));
  struct stat have {}, ours {};
  if (!owner || fstat(owner.get(), &have) != 0 || stat("/proc/self/ns/user", &ours) != 0)
    return fail("cannot tell who owns the container's mount namespace: " + errno_text(errno));
  if (have.st_dev != ours.st_dev || have.st_ino != ours.st_ino)
    return fail(ErrorKind::kRefused,
                "the container's process left the namespaces it was started in (it made a user namespace of its own)");
  return ns;
}

std::string swap_map(uint32_t id) {
  if (id == 0) return "0 0 4294967295\n";
  std::string map = "0 " + std::to_string(id) + " 1\n" + std::to_string(id) + " 0 1\n";
  if (id > 1) map += "1 1 " + std::to_string(id - 1) + "\n";
  uint64_t rest = 4294967295ull - (static_cast<uint64_t>(id) + 1);
  if (rest > 0) map += std::to_string(id + 1ull) + " " + std::to_string(id + 1ull) + " " + std::to_string(rest) + "\n";
  return map;
}

namespace {

Status write_text(const std::string& path, const std::string& text) {
  Fd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd || write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    return fail("cannot write " + path + ": " + errno_text(errno));
  return Ok{};
}

// A user namespace whose maps swap 0 and uid (gid): what the layers' idmap follows.
// Made by a child that only waits in it, then exits.
Result<Fd> make_swapping_userns(uint32_t uid, uint32_t gid) {
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) return fail("pipe: " + errno_text(errno));
  Fd rd(ready[0]), wr(ready[1]);
  pid_t pid = fork();
  if (pid < 0) return fail("fork: " + errno_text(errno));
  if (pid == 0) {
    char c = unshare(CLONE_NEWUSER) == 0 ? 1 : 0;
    (void)!write(wr.get(), &c, 1);
    pause();
    _exit(0);
  }
  wr.reset();
  char c = 0;
  Result<Fd> out = fail("cannot make a user namespace for the container's files");
  std::string proc = "/proc/" + std::to_string(pid);
  if (read(rd.get(), &c, 1) == 1 && c == 1 && write_text(proc + "/uid_map", swap_map(uid)) &&
      write_text(proc + "/gid_map", swap_map(gid))) {
    Fd ns(open((proc + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC));
    if (ns) out = std::move(ns);
  }
  kill(pid, SIGKILL);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  return out;
}

// path under dirfd ("/" first or not), through no symlink: the container's own mount points.
Fd open_beneath(int dirfd, const std::string& path) {
  return open_at(dirfd, path, O_PATH, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

// What the child does, step by step; the step that failed and errno go back to crispd.
struct Plan {
  const RootOverlay& root;
  const std::vector<std::string>& children;  // the container's mounts on its root
  const RootfsRequest& req;
  int container_ns, userns;
  std::string layers_at, root_at, image_at, data;
};

// Paths of the image, resolved as if its root were "/" and never off the new
// root's own mount: an image's symlink cannot lead a write anywhere else.
Fd open_in(int root, const std::string& path, uint64_t flags) {
  return open_at(root, path, flags, RESOLVE_IN_ROOT | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS);
}

std::string read_small(int root, const std::string& path) {
  Fd fd = open_in(root, path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW);
  struct stat st {};
  if (!fd || fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  auto text = read_up_to(fd.get(), 1u << 20);
  return text ? *text : "";
}

// name in dir written whole, then renamed over the old (a reader never sees
// half), the user's as the image's other files are.
bool replace_file(int dir, const std::string& name, const std::string& text, mode_t mode, const UserIdentity& u) {
  std::string tmp = name + ".crisp-new";
  (void)unlinkat(dir, tmp.c_str(), 0);
  Fd fd(openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  bool ok = fd && write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            fchmod(fd.get(), mode) == 0 && fchown(fd.get(), u.uid, u.gid) == 0 &&
            renameat(dir, tmp.c_str(), dir, name.c_str()) == 0;
  if (!ok) (void)unlinkat(dir, tmp.c_str(), 0);
  return ok;
}

// The home from /etc/skel's files, when nothing is there (a mount would be).
void make_home(int root, const UserIdentity& u) {
  if (u.home.size() < 2 || u.home.front() != '/' || open_in(root, u.home, O_PATH)) return;
  Fd dir = open_in(root, "/", O_PATH | O_DIRECTORY);
  for (const std::string& part : split(u.home, '/')) {
    if (part.empty() || part == "." || part == ".." || !dir) continue;
    if (mkdirat(dir.get(), part.c_str(), 0755) == 0) (void)!fchownat(dir.get(), part.c_str(), u.uid, u.gid, AT_SYMLINK_NOFOLLOW);
    dir = open_in(dir.get(), part, O_PATH | O_DIRECTORY | O_NOFOLLOW);
  }
  Fd skel = open_in(root, "/etc/skel", O_RDONLY | O_DIRECTORY);
  std::unique_ptr<DIR, int (*)(DIR*)> list(skel ? fdopendir(skel.release()) : nullptr, closedir);
  while (dirent* e = list && dir ? readdir(list.get()) : nullptr) {
    std::string name = e->d_name;
    Fd from(name == "." || name == ".." ? -1 : openat(dirfd(list.get()), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat st {};
    if (!from || fstat(from.get(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (auto text = read_up_to(from.get(), 1u << 20)) replace_file(dir.get(), name, *text, st.st_mode & 0777, u);
  }
}

// In the new root, before any of the container's mounts is on it: what enroot's standard hooks write.
bool write_user_files(const Plan& p, int root) {
  const UserIdentity& u = p.req.user;
  (void)mkdirat(root, "etc", 0755);
  Fd etc = open_in(root, "/etc", O_PATH | O_DIRECTORY);
  struct stat st {};
  Fd shell = u.shell.empty() ? Fd() : open_in(root, u.shell, O_PATH);
  bool has_shell = shell && fstat(shell.get(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111);
  if (!etc || !replace_file(etc.get(), "passwd", merged_passwd(read_small(root, "/etc/passwd"), u, has_shell), 0644, u) ||
      !replace_file(etc.get(), "group", merged_group(read_small(root, "/etc/group"), u), 0644, u))
    return false;
  if (!p.req.localtime.empty()) (void)replace_file(etc.get(), "localtime", p.req.localtime, 0644, u);
  if (Fd apt = open_in(root, "/etc/apt/apt.conf.d", O_PATH | O_DIRECTORY))
    (void)replace_file(apt.get(), "99crisp-sandbox", kAptSandboxConf, 0644, u);
  make_home(root, u);
  return true;
}

int child_steps(const Plan& p) {
  if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return 1;
  Fd tree(static_cast<int>(syscall(SYS_open_tree, AT_FDCWD, p.root.snapshots.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)));
  if (!tree || !idmap_mount(tree.get(), p.userns)) return 2;
  if (syscall(SYS_move_mount, tree.get(), "", AT_FDCWD, p.layers_at.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0) return 3;
  if (p.req.image_root >= 0) {
    Fd image(static_cast<int>(syscall(SYS_open_tree, p.req.image_root, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH)));
    if (!image || !idmap_mount(image.get(), p.userns)) return 12;
    if (syscall(SYS_move_mount, image.get(), "", AT_FDCWD, p.image_at.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0) return 3;
  }
  // Relative layer paths: the options must fit in a page, whatever the image's layer count.
  if (chdir(p.layers_at.c_str()) != 0 ||
      mount("overlay", p.root_at.c_str(), "overlay", MS_NOSUID | MS_NODEV, p.data.c_str()) != 0)
    return 4;
  Fd overlay(static_cast<int>(syscall(SYS_open_tree, AT_FDCWD, p.root_at.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)));
  if (!overlay || setns(p.container_ns, CLONE_NEWNS) != 0 || chdir("/") != 0) return 5;
  // The container's mounts, each with what is mounted under it, to move onto the new root.
  std::vector<Fd> children;
  for (const std::string& m : p.children) {
    Fd at = open_beneath(AT_FDCWD, m);
    children.emplace_back(static_cast<int>(syscall(SYS_open_tree, at.get(), "",
                                                   OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH)));
    if (!at || !children.back()) return 6;
  }
  // Stacked on the namespace's root: a task that joins starts at the topmost.
  if (syscall(SYS_move_mount, overlay.get(), "", AT_FDCWD, "/", MOVE_MOUNT_F_EMPTY_PATH) != 0) return 7;
  if (!write_user_files(p, overlay.get())) return 9;
  MountAttr readonly{MOUNT_ATTR_RDONLY, 0, 0, 0};
  if (p.req.readonly && syscall(SYS_mount_setattr, overlay.get(), "", AT_EMPTY_PATH, &readonly, sizeof readonly) != 0)
    return 10;
  for (size_t i = 0; i < children.size(); ++i) {
    Fd target = open_beneath(overlay.get(), p.children[i]);
    if (!target || syscall(SYS_move_mount, children[i].get(), "", target.get(), "",
                           MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
      return 8;
  }
  // /dev/ptmx, runc's symlink into /dev/pts, made the device itself: opened,
  // it finds the devpts at /dev/pts beside it, the node's (spec_builder.cc).
  Fd dev = open_beneath(overlay.get(), "/dev");
  umask(0);
  if (!dev || (unlinkat(dev.get(), "ptmx", 0) != 0 && errno != ENOENT) ||
      mknodat(dev.get(), "ptmx", S_IFCHR | 0666, makedev(5, 2)) != 0)
    return 11;
  return 0;
}

// Kernel work on root's directories only: seconds would mean something is wrong.
constexpr int kChildTimeoutMs = 10000;

constexpr const char* kSteps[] = {"",
                                  "a private mount namespace",
                                  "the idmapped clone of the layers",
                                  "placing the layers",
                                  "mounting the overlay",
                                  "entering the container",
                                  "cloning the container's mounts",
                                  "stacking the new root",
                                  "moving the container's mounts onto it",
                                  "writing the user's /etc/passwd and /etc/group",
                                  "making it read-only",
                                  "making /dev/ptmx",
                                  "the idmapped clone of the squashfs image"};

bool same_file(int a, int b) {
  struct stat sa {}, sb {};
  return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace

Status check_snapshots_dir(const std::string& dir) {
  Fd top(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  Fd fd = top ? open_at(top.get(), dir, O_PATH | O_DIRECTORY, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) : Fd();
  struct stat st {};
  if (!fd || fstat(fd.get(), &st) != 0) return fail("cannot open containerd's snapshots " + dir + ": " + errno_text(errno));
  if (st.st_uid != 0 || (st.st_mode & 022) != 0)
    return fail("containerd's snapshots " + dir + " are not root's alone: its layers are not used");
  return Ok{};
}

bool idmap_mount(int mount, int userns) {
  MountAttr idmap{MOUNT_ATTR_IDMAP, 0, 0, static_cast<uint64_t>(userns)};
  return syscall(SYS_mount_setattr, mount, "", AT_EMPTY_PATH, &idmap, sizeof idmap) == 0;
}

// One per user, kept (a namespace costs a fork to make; the mounts that use
// one hold it themselves); forgotten all at once past kMaxKept users.
// The caller gets its own descriptor of it.
Result<Fd> swapping_userns(uint32_t uid, uint32_t gid) {
  constexpr size_t kMaxKept = 1024;
  static std::mutex mu;
  static std::map<std::pair<uint32_t, uint32_t>, Fd> kept;
  std::lock_guard lock(mu);
  auto it = kept.find({uid, gid});
  if (it == kept.end()) {
    auto made = make_swapping_userns(uid, gid);
    if (!made) return made.take_error();
    if (kept.size() >= kMaxKept) kept.clear();
    it = kept.emplace(std::pair{uid, gid}, std::move(*made)).first;
  }
  Fd mine(fcntl(it->second.get(), F_DUPFD_CLOEXEC, 0));
  if (!mine) return fail("dup: " + errno_text(errno));
  return mine;
}

namespace {

Status make_rootfs_users(const RootfsRequest& req) {
  const int pid = req.pid;
  const std::string& stage = req.stage;
  auto root = overlay_of_snapshot(req.snapshot);
  if (!root) return fail(ErrorKind::kUnsupported, root.error());
  if (auto s = check_snapshots_dir(root->snapshots); !s) return s;
  auto ns = runc_mount_ns(pid);
  if (!ns) return ns.take_error();
  auto info = read_text("/proc/" + std::to_string(pid) + "/mountinfo", 1u << 20);
  if (!info) return fail("cannot read the container's mounts: " + info.error());
  // Still runc's namespace after the read: a process that leaves the node's user
  // namespace never comes back to it, and inside it the holder has no right to mount.
  if (auto again = runc_mount_ns(pid); !again || !same_file(again->get(), ns->get()))
    return fail(ErrorKind::kRefused, "the container's process left the namespaces it was started in");
  auto children = root_children(*info);
  if (!children) return fail(ErrorKind::kUnsupported, children.error());
  auto userns = swapping_userns(req.user.uid, req.user.gid);
  if (!userns) return userns.take_error();
  // The new upper layer beside containerd's ("9/crisp-fs"): root's 0755, which the idmap shows as the user's.
  std::string snapshot = parent_of(root->upper), upper = snapshot + "/crisp-fs", work = snapshot + "/crisp-work";
  for (const auto& [dir, mode] : {std::pair{stage, 0700}, {stage + "/l", 0700}, {stage + "/r", 0700}, {stage + "/i", 0700},
                                  {root->snapshots + "/" + upper, 0755}, {root->snapshots + "/" + work, 0700}})
    if (mkdir(dir.c_str(), static_cast<mode_t>(mode)) != 0 && errno != EEXIST)
      return fail("cannot create " + dir + ": " + errno_text(errno));
  // A squashfs image instead of the sandbox's image containerd mounted (its holder alone).
  std::string lower = root->upper;
  if (req.image_root >= 0) {
    lower += ":" + stage + "/i";
  } else if (req.image_to_extract >= 0) {
    std::string extracted = snapshot + "/crisp-image";
    if (mkdir((root->snapshots + "/" + extracted).c_str(), 0755) != 0 && errno != EEXIST)
      return fail("cannot create " + root->snapshots + "/" + extracted + ": " + errno_text(errno));
    UserCreds creds{req.user.uid, req.user.gid, {}};
    if (auto s = unsquash_as_user(creds, req.image_to_extract, root->snapshots + "/" + extracted, userns->get(),
                                  req.extract_timeout);
        !s)
      return fail("cannot extract the squashfs image: " + s.error());
    lower += ":" + extracted;
  } else {
    for (const std::string& l : root->lower) lower += ":" + l;
  }
  Plan plan{*root, *children, req, ns->get(), userns->get(), stage + "/l", stage + "/r", stage + "/i",
            "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work +
                (root->options.empty() ? "" : "," + root->options)};
  auto answer = run_child_steps([&] { return child_steps(plan); }, kChildTimeoutMs);
  if (!answer || answer->step > 12) return fail("the process giving the container's files to its user died or hung");
  if (answer->step != 0)
    // Idmapping the layers is what a filesystem may not support (before Linux 6.3, tmpfs; btrfs before 5.15 ...).
    return fail(answer->step == 2 ? ErrorKind::kUnsupported : ErrorKind::kFailed,
                "cannot give the container's files to its user: " + std::string(kSteps[answer->step]) + ": " +
                    errno_text(answer->err));
  return Ok{};
}

}  // namespace

Status give_rootfs_to_user(const RootfsRequest& req) {
  Status made = make_rootfs_users(req);
  // Where the root stays root's (kUnsupported) too: the mounts are the same.
  if (made || made.error_kind() == ErrorKind::kUnsupported)
    if (Status kept = keep_source_restrictions(req.pid, req.bind_sources); !kept) made = kept;
  // Whatever came of it, the holder, undumpable until now (crisp-holder.c), is the tasks' to join.
  Status released = release_holder(req.pid, req.user.uid);
  return made ? released : made;
}

}  // namespace crisp
