#include "agent/host/user_files.h"

#include <set>
#include <vector>

#include "common/strings.h"

namespace crisp {
namespace {

constexpr uint32_t kNobody = 65534;

// The image's lines with 4 (group) or 7 (passwd) fields, but none named in
// names or with an id (third field) in ids.
std::string others(const std::string& image, size_t fields, const std::set<std::string>& names,
                   const std::set<std::string>& ids) {
  std::string out;
  for (const std::string& line : split(image, '\n')) {
    std::vector<std::string> f = split(line, ':');
    if (f.size() != fields || f[0].empty() || line.front() == '#') continue;
    if (names.count(f[0]) || ids.count(f[2])) continue;
    out += line + "\n";
  }
  return out;
}

// The image's own line for name, if it has one that is well formed.
std::string image_line(const std::string& image, size_t fields, const std::string& name, const std::string& fallback) {
  for (const std::string& line : split(image, '\n')) {
    std::vector<std::string> f = split(line, ':');
    if (f.size() == fields && f[0] == name) return line + "\n";
  }
  return fallback;
}

// A field may not carry the file's separators.
std::string clean(std::string s) {
  for (char& c : s)
    if (c == ':' || c == '\n') c = ' ';
  return s;
}

}  // namespace

std::string merged_passwd(const std::string& image_passwd, const UserIdentity& id, bool shell_in_image) {
  std::string uid = std::to_string(id.uid), gid = std::to_string(id.gid);
  std::string out = image_line(image_passwd, 7, "root", "root:x:0:0:root:/root:/bin/sh\n");
  out += image_line(image_passwd, 7, "nobody", "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
  if (id.uid != 0 && id.uid != kNobody)
    out += clean(id.user) + ":x:" + uid + ":" + gid + ":" + clean(id.gecos) + ":" + clean(id.home) + ":" +
           (shell_in_image && !id.shell.empty() ? clean(id.shell) : "/bin/sh") + "\n";
  return out + others(image_passwd, 7, {"root", "nobody", id.user, "_apt"}, {"0", "65534", uid});
}

std::string merged_group(const std::string& image_group, const UserIdentity& id) {
  std::string gid = std::to_string(id.gid);
  std::string out = image_line(image_group, 4, "root", "root:x:0:\n");
  out += image_line(image_group, 4, "nogroup", "nogroup:x:65534:\n");
  if (id.gid != 0 && id.gid != kNobody) out += clean(id.group) + ":x:" + gid + ":\n";
  return out + others(image_group, 4, {"root", "nogroup", id.group}, {"0", "65534", gid});
}

}  // namespace crisp
