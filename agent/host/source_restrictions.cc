#include "agent/host/source_restrictions.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "agent/host/child_steps.h"
#include "agent/host/mount_info.h"
#include "agent/host/user_rootfs.h"
#include "common/fd.h"
#include "common/files.h"
#include "common/mount_api.h"
#include "common/strings.h"

namespace crisp {
namespace {

constexpr std::pair<uint64_t, unsigned long> kAttrFlags[] = {
    {MOUNT_ATTR_RDONLY, MS_RDONLY}, {MOUNT_ATTR_NOSUID, MS_NOSUID}, {MOUNT_ATTR_NODEV, MS_NODEV}, {MOUNT_ATTR_NOEXEC, MS_NOEXEC}};

// Sets attrs on the mount fd is the root of, keeping what it has.
bool add_mount_attrs(int fd, uint64_t attrs) {
  MountAttr set{attrs, 0, 0, 0};
  if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &set, sizeof set) == 0) return true;
  if (errno != ENOSYS) return false;
  // Before Linux 5.12: a remount of the bind, which takes every flag it is to have.
  struct statvfs st {};
  if (fstatvfs(fd, &st) != 0) return false;
  unsigned long flags = MS_REMOUNT | MS_BIND;
  for (auto [st_flag, ms_flag] : {std::pair{ST_RDONLY, MS_RDONLY}, {ST_NOSUID, MS_NOSUID}, {ST_NODEV, MS_NODEV},
                                  {ST_NOEXEC, MS_NOEXEC}, {ST_NOATIME, MS_NOATIME}, {ST_NODIRATIME, MS_NODIRATIME},
                                  {ST_RELATIME, MS_RELATIME}})
    if (st.f_flag & st_flag) flags |= ms_flag;
  for (auto [attr, ms_flag] : kAttrFlags)
    if (attrs & attr) flags |= ms_flag;
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  return mount(nullptr, path.c_str(), nullptr, flags, nullptr) == 0;
}

// In the child: each mount point, reached through no symlink from the container's root.
int child_steps(int ns, const std::vector<LostAttrs>& lost) {
  if (setns(ns, CLONE_NEWNS) != 0 || chdir("/") != 0) return 1;
  for (size_t i = 0; i < lost.size(); ++i) {
    Fd at = open_at(AT_FDCWD, lost[i].mount_point, O_PATH, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    if (!at || !add_mount_attrs(at.get(), lost[i].attrs)) return static_cast<int>(i) + 2;
  }
  return 0;
}

// Kernel work on a few mounts: seconds would mean something is wrong.
constexpr int kChildTimeoutMs = 10000;

}  // namespace

Status keep_source_restrictions(int pid, const std::vector<std::string>& bind_sources) {
  auto ns = runc_mount_ns(pid);
  if (!ns) return ns.take_error();
  auto info = read_text("/proc/" + std::to_string(pid) + "/mountinfo", 1u << 20);
  // The container's namespace was cloned from crispd's: its sources are as crispd sees them.
  auto host = read_text("/proc/self/mountinfo", 16u << 20);
  if (!info || !host) return fail("cannot read the mounts of the container and of the node: " + (info ? host : info).error());
  std::vector<LostAttrs> lost = lost_attrs(parse_mountinfo(*info), source_attrs(parse_mountinfo(*host), bind_sources));
  if (lost.empty()) return Ok{};
  auto answer = run_child_steps([&] { return child_steps(ns->get(), lost); }, kChildTimeoutMs);
  if (!answer) return fail("the process keeping the container's mounts as restricted as the node's died or hung");
  if (answer->step == 0) return Ok{};
  auto item = static_cast<size_t>(answer->step - 2);
  std::string where = answer->step == 1 ? "entering the container" : item < lost.size() ? "at " + lost[item].mount_point : "?";
  return fail("cannot keep the node's read-only, nosuid, nodev and noexec on the container's mounts: " + where + ": " +
              errno_text(answer->err));
}

}  // namespace crisp
