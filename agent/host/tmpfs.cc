#include "agent/host/tmpfs.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"

namespace crisp {

Result<std::vector<std::string>> make_tmpfs(const std::string& base, const std::string& key, size_t count,
                                            uint32_t uid, uint32_t gid) {
  std::string root = base + "/" + key;
  if (mkdir(base.c_str(), 0700) != 0 && errno != EEXIST) return fail("cannot create " + base + ": " + errno_text(errno));
  remove_tmpfs(root);  // a leftover of a crashed crispd
  if (mkdir(root.c_str(), 0700) != 0) return fail("cannot create " + root + ": " + errno_text(errno));
  std::vector<std::string> out;
  std::string opts = "mode=0700,uid=" + std::to_string(uid) + ",gid=" + std::to_string(gid);
  for (size_t i = 0; i < count; ++i) {
    std::string dir = root + "/" + std::to_string(i);
    if (mkdir(dir.c_str(), 0700) != 0 || mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0) {
      std::string err = errno_text(errno);
      remove_tmpfs(root);
      return fail("cannot make a tmpfs for --container-mounts: " + err);
    }
    out.push_back(dir);
  }
  return out;
}

void remove_tmpfs(const std::string& root) {
  struct stat st {};
  if (lstat(root.c_str(), &st) != 0) return;
  for (const std::string& name : list_dir(root)) {
    std::string dir = root + "/" + name;
    if (umount2(dir.c_str(), MNT_DETACH) != 0 && errno != EINVAL) log_warn("umount " + dir + ": " + errno_text(errno));
    if (rmdir(dir.c_str()) != 0) log_warn("rmdir " + dir + ": " + errno_text(errno));
  }
  if (rmdir(root.c_str()) != 0) log_warn("rmdir " + root + ": " + errno_text(errno));
}

}  // namespace crisp
