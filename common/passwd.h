// The password and group databases, read thread-safely (getpwuid_r, getgrgid_r) in one place.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace crisp {

struct PasswdEntry {
  std::string name;
  std::string home;
  std::string gecos;
  std::string shell;
};

// nullopt when the uid has no entry.
std::optional<PasswdEntry> lookup_uid(uint32_t uid);

// A user's uid and primary gid by name; nullopt when there is no such user.
std::optional<std::pair<uint32_t, uint32_t>> lookup_user(const std::string& name);

// The group's name; nullopt when the gid has no entry.
std::optional<std::string> lookup_gid(uint32_t gid);

// The user's groups as the system gives them at login (gid first among them); at most 1024.
std::vector<uint32_t> lookup_groups(const std::string& name, uint32_t gid);

}  // namespace crisp
