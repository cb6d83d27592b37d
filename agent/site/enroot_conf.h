// enroot.conf, for a site moving from Pyxis+enroot: which of its settings the site set, and
// what crisp does instead of each (most are enroot's own machinery: its caches, its runtime
// directories, its pulls; Pyxis sets the container options per job). crispd logs one line a
// setting at start, so an admin sees what of their file still means something. Pure.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace crisp {

// The settings a file sets: "NAME VALUE" lines (enroot's form), comments and blank lines
// dropped, names other than ENROOT_* dropped, at most kMaxEnrootSettings.
inline constexpr size_t kMaxEnrootSettings = 256;
std::vector<std::pair<std::string, std::string>> parse_enroot_conf(std::string_view text);

// What crisp does with the setting NAME.
std::string crisp_meaning_of(std::string_view name);

}  // namespace crisp
