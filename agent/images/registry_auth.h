// Registry credentials for CRI PullImage, found as Pyxis users keep them:
// enroot's netrc file (~/.config/enroot/.credentials) and Docker's
// ~/.docker/config.json, read with the user's permissions, then the node's own
// Docker-format file (crispd --registry-auth), readable by root only.
// The parsers are pure; crispd reads the files.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace crisp {

struct RegistryCredential {
  std::string username;
  std::string password;
  bool operator==(const RegistryCredential&) const = default;
};

// Both parsers take what a user wrote: they never throw, and a malformed file
// is an error (saying what is wrong, for the caller to name the file), while
// a file without a matching entry is nullopt.
using FoundCredential = Result<std::optional<RegistryCredential>>;

// netrc: "machine HOST login USER password PASS" (any whitespace, several
// entries). login, when given (the image's USER@), must match.
FoundCredential find_in_netrc(std::string_view text, const std::string& registry, const std::string& login);

// Docker's {"auths": {"HOST": {"auth": base64(user:pass)} | {"username", "password"}}};
// keys may carry a scheme and a path ("https://index.docker.io/v1/").
FoundCredential find_in_docker_config(std::string_view json, const std::string& registry, const std::string& login);

// The names a registry goes by in those files (Docker Hub's several).
bool registry_matches(std::string_view key, const std::string& registry);

}  // namespace crisp
