// Everything a create makes on the host before its container exists (tmpfs
// mounts, staged user mounts, the HCA sysfs view, the entrypoint's log file), owned by one object
// that removes it all unless the create succeeds and hands it to the
// container, whose labels then tie its removal to the container's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/host/user_access.h"
#include "common/result.h"

namespace crisp {

class HostArtifacts {
 public:
  HostArtifacts() = default;
  ~HostArtifacts();
  HostArtifacts(const HostArtifacts&) = delete;
  HostArtifacts& operator=(const HostArtifacts&) = delete;

  // The container's mount root, base/key: made by the first of these calls.
  Status open_mount_root(const std::string& base, const std::string& key);
  // A tmpfs under the mount root, owned by uid:gid, with options as crisp::make_tmpfs's; returns its host path.
  Result<std::string> make_tmpfs(uint32_t uid, uint32_t gid, const std::string& options);
  // A clone of the user's source under the mount root; returns its host path.
  Result<std::string> stage(const UserPath& source, bool propagates = false);
  Status make_hca_view(const std::string& class_dir, const std::vector<std::string>& hca_names, const std::string& dir);
  // A file the runtime will write (the CRI log): removed on failure if it exists.
  void add_file(const std::string& path) { files_.push_back(path); }

  const std::string& mount_root() const { return mount_root_; }
  const std::string& hca_view() const { return hca_view_; }
  // The create succeeded: nothing is removed here.
  void keep() { kept_ = true; }

 private:
  std::string mount_root_, hca_view_;
  size_t tmpfs_count_ = 0, staged_count_ = 0;
  std::vector<std::string> files_;
  bool kept_ = false;
};

}  // namespace crisp
