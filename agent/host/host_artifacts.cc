#include "agent/host/host_artifacts.h"

#include <unistd.h>

#include <cerrno>

#include "agent/host/hca_view.h"
#include "agent/host/host_mounts.h"
#include "common/log.h"
#include "common/strings.h"

namespace crisp {

HostArtifacts::~HostArtifacts() {
  if (kept_) return;
  if (!mount_root_.empty()) remove_mount_root(mount_root_);
  if (!hca_view_.empty()) remove_hca_view(hca_view_);
  for (const std::string& f : files_)
    if (unlink(f.c_str()) != 0 && errno != ENOENT) log_warn("removing " + f + ": " + errno_text(errno));
}

Status HostArtifacts::open_mount_root(const std::string& base, const std::string& key) {
  if (!mount_root_.empty()) return Ok{};
  auto made = make_mount_root(base, base + "/" + key);
  if (made) mount_root_ = base + "/" + key;
  return made;
}

Result<std::string> HostArtifacts::make_tmpfs(uint32_t uid, uint32_t gid, const std::string& options) {
  if (mount_root_.empty()) return fail("no mount root for the container's tmpfs");
  return crisp::make_tmpfs(mount_root_, tmpfs_count_++, uid, gid, options);
}

Result<std::string> HostArtifacts::stage(const UserPath& source, bool propagates) {
  if (mount_root_.empty()) return fail("no mount root for the container's mount of " + source.path);
  return stage_user_path(mount_root_, staged_count_++, source, propagates);
}

Status HostArtifacts::make_hca_view(const std::string& class_dir, const std::vector<std::string>& hca_names,
                                    const std::string& dir) {
  hca_view_ = dir;  // a half-made view is removed too
  return crisp::make_hca_view(class_dir, hca_names, dir);
}

}  // namespace crisp
