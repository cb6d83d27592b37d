#include "agent/host/host_artifacts.h"

#include <unistd.h>

#include <cerrno>

#include "agent/host/hca_view.h"
#include "agent/host/tmpfs.h"
#include "common/log.h"
#include "common/strings.h"

namespace crisp {

HostArtifacts::~HostArtifacts() {
  if (kept_) return;
  if (!tmpfs_root_.empty()) remove_tmpfs(tmpfs_root_);
  if (!hca_view_.empty()) remove_hca_view(hca_view_);
  for (const std::string& f : files_)
    if (unlink(f.c_str()) != 0 && errno != ENOENT) log_warn("removing " + f + ": " + errno_text(errno));
}

Result<std::vector<std::string>> HostArtifacts::make_tmpfs(const std::string& base, const std::string& key,
                                                           size_t count, uint32_t uid, uint32_t gid) {
  auto dirs = crisp::make_tmpfs(base, key, count, uid, gid);
  if (dirs) tmpfs_root_ = base + "/" + key;
  return dirs;
}

Status HostArtifacts::make_hca_view(const std::string& class_dir, const std::vector<std::string>& hca_names,
                                    const std::string& dir) {
  hca_view_ = dir;  // a half-made view is removed too
  return crisp::make_hca_view(class_dir, hca_names, dir);
}

}  // namespace crisp
