// --container-mounts: SRC[:DST[:FLAGS]][,...], FLAGS joined by '+' as in Pyxis.
// SRC is an absolute path, a path relative to the job's working directory
// (starting with '.'), "tmpfs" (a fresh tmpfs at DST) or "umount" (umount:DST[:nofail]:
// what was mounted at DST before this entry is not, as Pyxis detaches it).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace crisp {

struct MountSpec {
  std::string source;  // empty for a tmpfs
  std::string target;
  bool readonly = false;
  std::string propagation;  // empty: the runtime's default (rprivate)
  bool tmpfs = false;
  std::string tmpfs_options;  // checked size=, mode=, nr_inodes=, huge=, joined by ','
  bool umount = false;        // umount:DST
  bool nofail = false;        // umount:DST:nofail: nothing mounted at DST is no error

  bool operator==(const MountSpec&) const = default;
};

Result<std::vector<MountSpec>> parse_mounts(std::string_view text);

// A tmpfs's options as FLAGS give them ("size=1G,huge=within_size"): only
// size, nr_inodes, mode and huge, each with a value of its form.
Status check_tmpfs_options(std::string_view options);
// One such option ("size=1G").
bool tmpfs_option(std::string_view flag);

// Relative sources made absolute against the job's working directory.
MountSpec resolve_relative(MountSpec m, const std::string& workdir);

// Lexically normalized absolute path ("a//b/./c/" -> "a/b/c"); ".." is rejected by callers.
std::string normalize_path(std::string_view path);

}  // namespace crisp
