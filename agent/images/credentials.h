// Which credentials a pull uses: the user's own files first (read with the
// user's permissions), then the node's file (root's). None: an anonymous pull.
#pragma once

#include <optional>
#include <string>

#include "agent/host/user_access.h"
#include "agent/images/registry_auth.h"

namespace crisp {

// A user's own files are looked for under home, read with their credentials.
struct UserFiles {
  UserCreds creds;
  std::string home;
};

// user null: only the node's file (crispctl pull, as root). A user's file that
// is malformed, not a regular file, too large or too slow to read is an error
// naming it; a missing one, or one the user may not read, is skipped.
FoundCredential credentials_for(const UserFiles* user, const std::string& node_file, const std::string& registry,
                                const std::string& login);

}  // namespace crisp
