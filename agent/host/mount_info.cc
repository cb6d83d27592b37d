#include "agent/host/mount_info.h"

#include <optional>
#include <set>

#include "common/mount_api.h"
#include "common/strings.h"

namespace crisp {
namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(const std::string& s) {
  auto octal = [](char c) { return c >= '0' && c <= '7'; };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 4 <= s.size() && octal(s[i + 1]) && octal(s[i + 2]) && octal(s[i + 3])) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

// path below (or at) mount point at: what follows it, "" when equal; nullopt when not below.
std::optional<std::string> below(const std::string& path, const std::string& at) {
  if (path == at) return std::string();
  if (at == "/") return path.size() > 1 && path[0] == '/' ? std::optional(path.substr(1)) : std::nullopt;
  if (path.size() > at.size() && path.compare(0, at.size(), at) == 0 && path[at.size()] == '/')
    return path.substr(at.size() + 1);
  return std::nullopt;
}

std::string joined(const std::string& root, const std::string& rest) {
  if (rest.empty()) return root;
  return root == "/" ? "/" + rest : root + "/" + rest;
}

}  // namespace

std::vector<MountInfoLine> parse_mountinfo(const std::string& text) {
  std::vector<MountInfoLine> out;
  for (const std::string& line : split(text, '\n')) {
    std::vector<std::string> f = split(line, ' ');
    size_t dash = 6;  // after the optional fields, "-", then fstype, source, super options
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (dash + 3 >= f.size()) continue;
    out.push_back({f[0], f[1], f[2], unescape(f[3]), unescape(f[4]), f[5], f[dash + 1], f[dash + 3]});
  }
  return out;
}

uint64_t restricting_attrs(const std::string& options) {
  uint64_t attrs = 0;
  for (const std::string& o : split(options, ',')) {
    if (o == "ro") attrs |= MOUNT_ATTR_RDONLY;
    else if (o == "nosuid") attrs |= MOUNT_ATTR_NOSUID;
    else if (o == "nodev") attrs |= MOUNT_ATTR_NODEV;
    else if (o == "noexec") attrs |= MOUNT_ATTR_NOEXEC;
  }
  return attrs;
}

std::vector<SourceAttrs> source_attrs(const std::vector<MountInfoLine>& host, const std::vector<std::string>& sources) {
  std::vector<SourceAttrs> out;
  for (const std::string& source : sources) {
    // The mount the path is on: the longest mount point above it, the last of those stacked there.
    const MountInfoLine* on = nullptr;
    std::string rest;
    for (const MountInfoLine& l : host)
      if (auto r = below(source, l.mount_point); r && (!on || l.mount_point.size() >= on->mount_point.size())) {
        on = &l;
        rest = *r;
      }
    if (!on) continue;
    out.push_back({on->dev, joined(on->root, rest), restricting_attrs(on->options)});
    // What is mounted below the source comes along (runc's bind is recursive).
    for (const MountInfoLine& l : host)
      if (l.mount_point != source && below(l.mount_point, source))
        out.push_back({l.dev, l.root, restricting_attrs(l.options)});
  }
  return out;
}

std::vector<LostAttrs> lost_attrs(const std::vector<MountInfoLine>& container, const std::vector<SourceAttrs>& sources) {
  std::vector<LostAttrs> out;
  for (const MountInfoLine& l : container) {
    uint64_t want = 0;
    for (const SourceAttrs& s : sources)
      if (s.dev == l.dev && s.root == l.root) want |= s.attrs;
    if (uint64_t lost = want & ~restricting_attrs(l.options)) out.push_back({l.mount_point, lost});
  }
  return out;
}

bool made_on_local_mounts(const std::vector<MountInfoLine>& mounts, const std::vector<std::string>& paths) {
  static const std::set<std::string> kLocal = {"overlay", "tmpfs",  "devtmpfs", "proc",   "sysfs",
                                               "devpts",  "mqueue", "cgroup",   "cgroup2"};
  for (size_t i = 0; i < paths.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (below(paths[i], paths[j])) return false;
    for (const MountInfoLine& l : mounts)
      if (below(paths[i], l.mount_point) && !kLocal.contains(l.fstype)) return false;
  }
  return true;
}

}  // namespace crisp
