#include "agent/images/credentials.h"

#include "common/files.h"
#include "common/log.h"

namespace crisp {

std::optional<RegistryCredential> credentials_for(const UserFiles* user, const std::string& node_file,
                                                  const std::string& registry, const std::string& login) {
  constexpr size_t kMaxFile = 1 << 20;
  if (user) {
    // A missing or unreadable file is the usual case: nothing to use.
    if (auto netrc = read_file_as_user(user->creds, user->home + "/.config/enroot/.credentials", kMaxFile))
      if (auto c = find_in_netrc(*netrc, registry, login)) return c;
    if (auto docker = read_file_as_user(user->creds, user->home + "/.docker/config.json", kMaxFile))
      if (auto c = find_in_docker_config(*docker, registry, login)) return c;
  }
  if (node_file.empty()) return std::nullopt;
  auto text = read_text(node_file, kMaxFile);
  if (!text) {
    log_warn("the node's registry credentials: " + text.error());
    return std::nullopt;
  }
  return find_in_docker_config(*text, registry, login);
}

}  // namespace crisp
