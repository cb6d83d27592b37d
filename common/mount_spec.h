// --container-mounts: SRC[:DST[:FLAGS]][,...], FLAGS joined by '+' as in Pyxis.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace crisp {

struct MountSpec {
  std::string source;
  std::string target;
  bool readonly = false;
  std::string propagation;  // empty: the runtime's default (rprivate)

  bool operator==(const MountSpec&) const = default;
};

Result<std::vector<MountSpec>> parse_mounts(std::string_view text);

// Lexically normalized absolute path ("a//b/./c/" -> "a/b/c"); ".." is rejected by callers.
std::string normalize_path(std::string_view path);

}  // namespace crisp
