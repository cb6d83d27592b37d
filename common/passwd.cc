#include "common/passwd.h"

#include <grp.h>
#include <pwd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace crisp {

namespace {

// Calls get(buf) with a growing buf while it answers ERANGE (an entry larger
// than the buffer), a few times; true when it answered. The entry's strings live in buf.
template <typename Get>
bool with_buffer(std::vector<char>& buf, Get get) {
  buf.resize(16384);
  for (int tries = 0; tries < 4; ++tries, buf.resize(buf.size() * 4)) {
    int rc = get(buf);
    if (rc != ERANGE) return rc == 0;
  }
  return false;
}

std::string text(const char* s) { return s ? s : ""; }

}  // namespace

std::optional<PasswdEntry> lookup_uid(uint32_t uid) {
  struct passwd pw, *found = nullptr;
  std::vector<char> buf;
  if (!with_buffer(buf, [&](std::vector<char>& b) { return getpwuid_r(uid, &pw, b.data(), b.size(), &found); }) || !found)
    return std::nullopt;
  return PasswdEntry{text(pw.pw_name), text(pw.pw_dir), text(pw.pw_gecos), text(pw.pw_shell)};
}

std::optional<std::pair<uint32_t, uint32_t>> lookup_user(const std::string& name) {
  struct passwd pw, *found = nullptr;
  std::vector<char> buf;
  if (!with_buffer(buf, [&](std::vector<char>& b) { return getpwnam_r(name.c_str(), &pw, b.data(), b.size(), &found); }) ||
      !found)
    return std::nullopt;
  return std::pair<uint32_t, uint32_t>(pw.pw_uid, pw.pw_gid);
}

std::optional<std::string> lookup_gid(uint32_t gid) {
  struct group gr, *found = nullptr;
  std::vector<char> buf;
  if (!with_buffer(buf, [&](std::vector<char>& b) { return getgrgid_r(gid, &gr, b.data(), b.size(), &found); }) || !found)
    return std::nullopt;
  return text(gr.gr_name);
}

std::vector<uint32_t> lookup_groups(const std::string& name, uint32_t gid) {
  // Bounded: a user in more groups than this gets the first ones.
  int n = 1024;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  if (getgrouplist(name.c_str(), gid, groups.data(), &n) < 0) n = static_cast<int>(groups.size());
  return {groups.begin(), groups.begin() + std::max(n, 0)};
}

}  // namespace crisp
