#include "agent/host/squashfs_tools.h"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "agent/host/entrypoint.h"
#include "agent/host/user_rootfs.h"
#include "common/fd.h"
#include "common/strings.h"
#include "common/subprocess.h"

namespace crisp {
namespace {

Status run_tool(const char* what, ProcessSpec spec) {
  spec.env = std::vector<std::string>{"PATH=/usr/bin:/bin", "LC_ALL=C"};
  spec.max_output = 64 << 10;
  auto ran = run_process(spec);
  if (!ran) return fail(std::string(what) + ": " + ran.error());
  if (!ran->succeeded()) {
    std::string why = last_lines(ran->err.empty() ? ran->out : ran->err, 3, 600);
    return fail(std::string(what) + " failed (" + ran->status_text() + ")" + (why.empty() ? "" : ": " + why));
  }
  return Ok{};
}

}  // namespace

Status unsquash_as_user(const UserCreds& creds, int image, const std::string& dir, int userns,
                        std::chrono::seconds timeout) {
  ProcessSpec spec;
  spec.argv = {kUnsquashfs, "-f", "-d", ".", "-n", "-q", "-no-xattrs", "/proc/self/fd/3"};
  spec.pass_fds = {image};
  spec.timeout = timeout;
  spec.prepare = [&] {
    int view = static_cast<int>(syscall(SYS_open_tree, AT_FDCWD, dir.c_str(), OPEN_TREE_CLONE));
    // Detached: ".." at its root stays there, and nothing else of the node is seen through the idmap.
    return view >= 0 && idmap_mount(view, userns) && fchdir(view) == 0 && close(view) == 0 &&
           take_user_ids(creds.uid, creds.gid, creds.groups);
  };
  return run_tool("unsquashfs", std::move(spec));
}

std::string cat_as_user(const UserCreds& creds, int image, const std::string& path, size_t max_bytes,
                        std::chrono::seconds timeout) {
  ProcessSpec spec;
  spec.argv = {kUnsquashfs, "-cat", "/proc/self/fd/3", path};
  spec.env = std::vector<std::string>{"PATH=/usr/bin:/bin", "LC_ALL=C"};
  spec.pass_fds = {image};
  spec.timeout = timeout;
  spec.max_output = max_bytes;
  spec.prepare = [&] { return take_user_ids(creds.uid, creds.gid, creds.groups); };
  auto ran = run_process(spec);
  return ran && ran->succeeded() ? ran->out : std::string();
}

namespace {

// mksquashfs's arguments and bounds; the source is the directory it starts in.
ProcessSpec mksquash_spec(int out, const SquashfsBounds& bounds) {
  ProcessSpec spec;
  auto processors = std::to_string(std::max(1, static_cast<int>(bounds.limits.cpus + 0.999)));
  auto memory = std::to_string(std::max<uint64_t>(64, bounds.limits.memory_bytes / 2 >> 20)) + "M";
  spec.argv = {kMksquashfs, ".", "/proc/self/fd/3", "-noappend", "-all-root", "-no-progress", "-quiet", "-no-xattrs",
               "-processors", processors, "-mem", memory, "-wildcards", "-e", "dev/*", ".crisp"};
  spec.pass_fds = {out};
  spec.timeout = bounds.timeout;
  return spec;
}

bool enter_cgroup(const SquashfsBounds& bounds) { return !bounds.cgroup || bounds.cgroup->enter(); }

}  // namespace

Status mksquash_as_user(const UserCreds& creds, int container_ns, int out, const SquashfsBounds& bounds) {
  Fd own(open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC));
  if (!own) return fail("cannot open crispd's mount namespace: " + errno_text(errno));
  ProcessSpec spec = mksquash_spec(out, bounds);
  // The container's root cloned alone (its /proc, /dev, binds stay out), then back in the node's
  // namespace: the program and its libraries are the node's, never the image's.
  spec.prepare = [&] {
    if (!enter_cgroup(bounds) || setns(container_ns, CLONE_NEWNS) != 0) return false;
    int root = static_cast<int>(syscall(SYS_open_tree, AT_FDCWD, "/", OPEN_TREE_CLONE));
    return root >= 0 && setns(own.get(), CLONE_NEWNS) == 0 && fchdir(root) == 0 && close(root) == 0 &&
           take_user_ids(creds.uid, creds.gid, creds.groups);
  };
  return run_tool("mksquashfs", std::move(spec));
}

Status mksquash_layers(const LayerTree& tree, int out, const SquashfsBounds& bounds) {
  // Layer paths relative to layers_dir: the options fit in a page, whatever the layer count.
  std::string data = "lowerdir=" + tree.top;
  for (const std::string& l : tree.lower) data += ":" + l;
  ProcessSpec spec = mksquash_spec(out, bounds);
  spec.prepare = [&] {
    return enter_cgroup(bounds) && unshare(CLONE_NEWNS) == 0 &&
           mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 && chdir(tree.layers_dir.c_str()) == 0 &&
           mount("overlay", tree.mount_at.c_str(), "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, data.c_str()) == 0 &&
           chdir(tree.mount_at.c_str()) == 0;
  };
  return run_tool("mksquashfs", std::move(spec));
}

}  // namespace crisp
