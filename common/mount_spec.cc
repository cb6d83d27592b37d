#include "common/mount_spec.h"

#include <algorithm>
#include <array>

#include "common/strings.h"

namespace crisp {
namespace {

constexpr std::array<std::string_view, 8> kPropagations = {"private", "rprivate", "slave",      "rslave",
                                                           "shared",  "rshared",  "unbindable", "runbindable"};

Error bad(std::string_view entry, const std::string& why) {
  return fail("invalid --container-mounts entry '" + std::string(entry) + "': " + why +
              " (expected SRC[:DST[:FLAGS]], SRC a path, tmpfs or umount, FLAGS among ro, rw, [r]private, [r]slave, [r]shared, "
              "[r]unbindable, and for a tmpfs size=, mode=, nr_inodes=, huge=, joined by '+')");
}

bool all_digits(std::string_view s, size_t min, size_t max, char last = '9') {
  return s.size() >= min && s.size() <= max && std::all_of(s.begin(), s.end(), [&](char c) { return c >= '0' && c <= last; });
}

// A count with an optional k/m/g (or %, for size) suffix, as tmpfs reads it.
bool tmpfs_amount(std::string_view v, bool percent_too) {
  if (!v.empty() && std::string_view("kKmMgG").find(v.back()) != std::string_view::npos) v.remove_suffix(1);
  else if (percent_too && !v.empty() && v.back() == '%') return all_digits(v.substr(0, v.size() - 1), 1, 3);
  return all_digits(v, 1, 18);
}

Result<std::string> check_path(std::string_view entry, std::string_view what, std::string_view path) {
  if (path.empty()) return bad(entry, std::string(what) + " is empty");
  if (path.front() != '/') return bad(entry, std::string(what) + " '" + std::string(path) + "' is not an absolute path");
  for (const std::string& part : split(path, '/'))
    if (part == "..") return bad(entry, std::string(what) + " must not contain '..'");
  return normalize_path(path);
}

}  // namespace

bool tmpfs_option(std::string_view flag) {
  size_t eq = flag.find('=');
  if (eq == std::string_view::npos) return false;
  std::string_view key = flag.substr(0, eq), value = flag.substr(eq + 1);
  if (key == "size") return tmpfs_amount(value, true);
  if (key == "nr_inodes") return tmpfs_amount(value, false);
  if (key == "mode") return all_digits(value, 3, 4, '7');
  if (key == "huge") return value == "never" || value == "always" || value == "within_size" || value == "advise";
  return false;
}

std::string normalize_path(std::string_view path) {
  std::string out;
  for (const std::string& part : split(path, '/')) {
    if (part.empty() || part == ".") continue;
    out += "/" + part;
  }
  return out.empty() ? "/" : out;
}

Result<std::vector<MountSpec>> parse_mounts(std::string_view text) {
  std::vector<MountSpec> mounts;
  for (const std::string& entry : split(text, ',')) {
    if (entry.empty()) return bad(entry, "an entry is empty");
    std::vector<std::string> fields = split(entry, ':');
    if (fields.size() > 3) return bad(entry, "too many ':'");

    MountSpec m;
    if (fields[0] == "tmpfs") {
      if (fields.size() < 2) return bad(entry, "a tmpfs needs a destination (tmpfs:DST)");
      m.tmpfs = true;
    } else if (fields[0] == "umount") {
      if (fields.size() < 2) return bad(entry, "umount needs the path to unmount (umount:DST)");
      m.umount = true;
    } else if (!fields[0].empty() && fields[0].front() == '.') {
      m.source = fields[0];  // made absolute on the node, against the job's working directory
      if (fields.size() < 2) return bad(entry, "a relative source needs an absolute destination");
    } else {
      auto src = check_path(entry, "source", fields[0]);
      if (!src) return src.take_error();
      m.source = *src;
    }
    auto dst = check_path(entry, "destination", fields.size() > 1 ? fields[1] : fields[0]);
    if (!dst) return dst.take_error();
    m.target = *dst;
    if (m.target == "/") return bad(entry, "the destination must not be '/'");

    if (fields.size() == 3) {
      bool seen_mode = false;
      for (const std::string& flag : split(fields[2], '+')) {
        if (m.umount) {
          // enroot's options of an unmount: nofail, and silent (its warning, which crisp never prints).
          if (flag != "nofail" && flag != "silent") return bad(entry, "unknown flag '" + flag + "' for umount");
          m.nofail = m.nofail || flag == "nofail";
        } else if (flag == "ro" || flag == "rw") {
          if (seen_mode) return bad(entry, "ro and rw given twice");
          seen_mode = true;
          m.readonly = flag == "ro";
        } else if (std::find(kPropagations.begin(), kPropagations.end(), flag) != kPropagations.end()) {
          if (!m.propagation.empty()) return bad(entry, "more than one propagation flag");
          m.propagation = flag;
        } else if (m.tmpfs && tmpfs_option(flag)) {
          m.tmpfs_options += (m.tmpfs_options.empty() ? "" : ",") + flag;
        } else {
          return bad(entry, "unknown flag '" + flag + "'");
        }
      }
    }
    for (const MountSpec& other : mounts)
      if (!m.umount && !other.umount && other.target == m.target)
        return bad(entry, "destination " + m.target + " is mounted twice");
    mounts.push_back(std::move(m));
  }
  return mounts;
}

Status check_tmpfs_options(std::string_view options) {
  if (options.empty()) return Ok{};
  for (const std::string& o : split(options, ','))
    if (!tmpfs_option(o)) return fail("invalid tmpfs option '" + o + "'");
  return Ok{};
}

MountSpec resolve_relative(MountSpec m, const std::string& workdir) {
  if (!m.tmpfs && !m.source.empty() && m.source.front() == '.') m.source = workdir + "/" + m.source;
  return m;
}

}  // namespace crisp
