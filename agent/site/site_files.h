// The text of a site's container configuration, in enroot's forms (an admin moving
// from Pyxis+enroot keeps the files): mounts.d/*.fstab lines and environ.d/*.env lines,
// with ${NAME} taken from the job's environment as enroot's envsubst takes it. Pure:
// the files are root's, but the values substituted are the user's.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace crisp {

// A variable's value from the job's environment; nullopt: unset (enroot substitutes "").
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

// enroot's envsubst: each ${NAME} (NAME a variable's name) replaced by its value or
// nothing; $NAME and anything else stay as written. used: whether one was replaced.
std::string substitute_env(std::string_view text, const EnvLookup& lookup, bool* used = nullptr);

// One fstab(5) line: SOURCE TARGET [TYPE [OPTIONS [DUMP [PASS]]]], fields separated by
// blanks, \040 \011 \012 \134 escapes decoded, then ${NAME} substituted in each field (a
// value cannot add fields, as it could in enroot, which substitutes the line). nullopt: a
// comment or a blank line.
struct FstabLine {
  std::string source, target, type;  // type "" when omitted
  std::vector<std::string> options;  // OPTIONS split at ','
  bool source_from_env = false;      // a ${NAME} was replaced in source: the path is then the user's
};
Result<std::optional<FstabLine>> parse_fstab_line(std::string_view line, const EnvLookup& lookup);

// What crisp does with such a line: a bind mount of source (absolute) at target
// (absolute in the container), or a tmpfs (type tmpfs: its size=, mode=, nr_inodes= and
// huge= kept, made the user's, nosuid and nodev). enroot's defaults are read-write; crisp's own files'
// are read-only unless "rw". Errors name what is not supported (another file system
// type, a relative path, "..", an unknown option, a source or target in /proc, /sys or
// /dev, which the runtime makes: enroot's own mounts.d binds the host's there); ignored
// lists the options a CRI bind mount cannot apply (nosuid, nodev, noexec: the source's
// own mount flags stay).
struct SiteMountSpec {
  std::string source, target;
  bool tmpfs = false;         // type tmpfs: a fresh one at target, the user's, source ignored
  std::string tmpfs_options;  // its size=, mode=, nr_inodes=, huge=, joined by ','

  bool source_from_env = false;
  bool readonly = true;
  std::string propagation;  // "", "private", "rprivate", "slave", "rslave", "shared", "rshared"
  bool optional = false;    // "nofail": a missing source is left out
  std::vector<std::string> ignored;
};
Result<SiteMountSpec> site_mount_of(const FstabLine& line, bool read_write_default);

// An environ.d file's NAME=VALUE lines, as enroot's envsubst then envfmt give them:
// ${NAME} substituted in each line, leading blanks, comments and blank lines dropped,
// lines that are not NAME=VALUE dropped, ENROOT_* dropped, one pair of quotes around
// the whole value removed. At most kMaxSiteEnv lines.
inline constexpr size_t kMaxSiteEnv = 4096;
std::vector<std::string> parse_environ_lines(std::string_view text, const EnvLookup& lookup);

}  // namespace crisp
