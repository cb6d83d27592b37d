// tmpfs sources of --container-mounts: CRI has no tmpfs mount type, so crispd
// mounts each on the host under a directory per container and bind-mounts it
// in; the directory goes when the container does.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace crisp {

inline constexpr const char* kTmpfsBase = "/run/crisp/tmpfs";

// Mounts count tmpfs owned by uid:gid (mode 0700) under base/key; returns their host paths.
Result<std::vector<std::string>> make_tmpfs(const std::string& base, const std::string& key, size_t count,
                                            uint32_t uid, uint32_t gid);
// Unmounts and removes what make_tmpfs made under root (base/key).
void remove_tmpfs(const std::string& root);

}  // namespace crisp
