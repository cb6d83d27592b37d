// Which credentials a pull uses: the user's own files first (read with the
// user's permissions), then the node's file (root's). None: an anonymous pull.
#pragma once

#include <optional>
#include <string>

#include "agent/registry_auth.h"
#include "agent/user_access.h"

namespace crisp {

std::optional<RegistryCredential> credentials_for(const UserCreds* user, const std::string& node_file,
                                                  const std::string& registry, const std::string& login);

}  // namespace crisp
