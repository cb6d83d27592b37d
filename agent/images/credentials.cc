#include "agent/images/credentials.h"

#include "common/files.h"
#include "common/log.h"

namespace crisp {
namespace {

constexpr size_t kMaxFile = 1 << 20;

using Parser = FoundCredential (*)(std::string_view, const std::string&, const std::string&);

FoundCredential from_user_file(const UserFiles& user, const std::string& relative, Parser parse,
                               const std::string& registry, const std::string& login) {
  std::string path = user.home + "/" + relative;
  auto text = read_file_as_user(user.creds, path, kMaxFile);
  if (!text) return text.take_error();
  if (!*text) return std::optional<RegistryCredential>();
  auto found = parse(**text, registry, login);
  if (!found) return fail(path + ": " + found.error() + "; fix or remove it");
  return found;
}

}  // namespace

FoundCredential credentials_for(const UserFiles* user, const std::string& node_file, const std::string& registry,
                                const std::string& login) {
  if (user) {
    auto netrc = from_user_file(*user, ".config/enroot/.credentials", find_in_netrc, registry, login);
    if (!netrc || *netrc) return netrc;
    auto docker = from_user_file(*user, ".docker/config.json", find_in_docker_config, registry, login);
    if (!docker || *docker) return docker;
  }
  if (node_file.empty()) return std::optional<RegistryCredential>();
  auto text = read_text(node_file, kMaxFile);
  auto found = text ? find_in_docker_config(*text, registry, login) : FoundCredential(text.take_error());
  if (!found) {
    // The admin's file: their log says why, and the pull goes on without it.
    log_warn("the node's registry credentials " + node_file + ": " + found.error());
    return std::optional<RegistryCredential>();
  }
  return found;
}

}  // namespace crisp
