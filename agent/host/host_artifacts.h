// Everything a create makes on the host before its container exists (tmpfs
// mounts, the HCA sysfs view, the entrypoint's log file), owned by one object
// that removes it all unless the create succeeds and hands it to the
// container, whose labels then tie its removal to the container's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace crisp {

class HostArtifacts {
 public:
  HostArtifacts() = default;
  ~HostArtifacts();
  HostArtifacts(const HostArtifacts&) = delete;
  HostArtifacts& operator=(const HostArtifacts&) = delete;

  // count tmpfs under base/key, owned by uid:gid; returns their host paths.
  Result<std::vector<std::string>> make_tmpfs(const std::string& base, const std::string& key, size_t count,
                                              uint32_t uid, uint32_t gid);
  Status make_hca_view(const std::string& class_dir, const std::vector<std::string>& hca_names, const std::string& dir);
  // A file the runtime will write (the CRI log): removed on failure if it exists.
  void add_file(const std::string& path) { files_.push_back(path); }

  const std::string& tmpfs_root() const { return tmpfs_root_; }
  const std::string& hca_view() const { return hca_view_; }
  // The create succeeded: nothing is removed here.
  void keep() { kept_ = true; }

 private:
  std::string tmpfs_root_, hca_view_;
  std::vector<std::string> files_;
  bool kept_ = false;
};

}  // namespace crisp
