// Checks a path with a user's credentials, never root's, so that a bind mount
// cannot expose what the user could not reach on the host.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace crisp {

struct UserCreds {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;
};

// Resolves path as the user (symlinks included) and checks that the user may
// read it (and search it, for a directory). Returns the resolved path.
Result<std::string> resolve_as_user(const UserCreds& creds, const std::string& path);

// Reads a small file (at most max_bytes) with the user's permissions.
Result<std::string> read_file_as_user(const UserCreds& creds, const std::string& path, size_t max_bytes);

// The user's home directory, from the password database.
Result<std::string> home_of(uint32_t uid);

}  // namespace crisp
