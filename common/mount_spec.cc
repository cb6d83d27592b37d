#include "common/mount_spec.h"

#include <algorithm>
#include <array>

#include "common/strings.h"

namespace crisp {
namespace {

constexpr std::array<std::string_view, 6> kPropagations = {"private", "rprivate", "slave",
                                                           "rslave",  "shared",   "rshared"};

Error bad(std::string_view entry, const std::string& why) {
  return fail("invalid --container-mounts entry '" + std::string(entry) + "': " + why +
              " (expected SRC[:DST[:FLAGS]], SRC a path or tmpfs, FLAGS among ro, rw, [r]private, [r]slave, [r]shared joined by '+')");
}

Result<std::string> check_path(std::string_view entry, std::string_view what, std::string_view path) {
  if (path.empty()) return bad(entry, std::string(what) + " is empty");
  if (path.front() != '/') return bad(entry, std::string(what) + " '" + std::string(path) + "' is not an absolute path");
  for (const std::string& part : split(path, '/'))
    if (part == "..") return bad(entry, std::string(what) + " must not contain '..'");
  return normalize_path(path);
}

}  // namespace

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
      return bad(entry, "the 'umount' source is not supported by crisp");
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
        if (flag == "ro" || flag == "rw") {
          if (seen_mode) return bad(entry, "ro and rw given twice");
          seen_mode = true;
          m.readonly = flag == "ro";
        } else if (std::find(kPropagations.begin(), kPropagations.end(), flag) != kPropagations.end()) {
          if (!m.propagation.empty()) return bad(entry, "more than one propagation flag");
          m.propagation = flag;
        } else {
          return bad(entry, "unknown flag '" + flag + "'");
        }
      }
    }
    for (const MountSpec& other : mounts)
      if (other.target == m.target) return bad(entry, "destination " + m.target + " is mounted twice");
    mounts.push_back(std::move(m));
  }
  return mounts;
}

MountSpec resolve_relative(MountSpec m, const std::string& workdir) {
  if (!m.tmpfs && !m.source.empty() && m.source.front() == '.') m.source = workdir + "/" + m.source;
  return m;
}

}  // namespace crisp
