#include "agent/credentials.h"

#include <fstream>
#include <sstream>

#include "agent/log.h"

namespace crisp {

std::optional<RegistryCredential> credentials_for(const UserCreds* user, const std::string& node_file,
                                                  const std::string& registry, const std::string& login) {
  constexpr size_t kMaxFile = 1 << 20;
  if (user) {
    if (auto home = home_of(user->uid)) {
      // A missing or unreadable file is the usual case: nothing to use.
      if (auto netrc = read_file_as_user(*user, *home + "/.config/enroot/.credentials", kMaxFile))
        if (auto c = find_in_netrc(*netrc, registry, login)) return c;
      if (auto docker = read_file_as_user(*user, *home + "/.docker/config.json", kMaxFile))
        if (auto c = find_in_docker_config(*docker, registry, login)) return c;
    }
  }
  if (node_file.empty()) return std::nullopt;
  std::ifstream f(node_file);
  if (!f) {
    log_warn("cannot read the node's registry credentials " + node_file);
    return std::nullopt;
  }
  std::stringstream text;
  text << f.rdbuf();
  return find_in_docker_config(text.str(), registry, login);
}

}  // namespace crisp
