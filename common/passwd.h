// The password database, read thread-safely (getpwuid_r) in one place.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace crisp {

struct PasswdEntry {
  std::string name;
  std::string home;
};

// nullopt when the uid has no entry.
std::optional<PasswdEntry> lookup_uid(uint32_t uid);

}  // namespace crisp
