// A mount as containerd's snapshot service describes one (containerd.types.Mount):
// what crispd learns of a snapshot's layer directories from containerd itself.
#pragma once

#include <string>
#include <vector>

namespace crisp {

struct SnapshotMount {
  std::string type;  // "overlay", "bind"
  std::string source;
  std::vector<std::string> options;  // "lowerdir=…", "upperdir=…", "ro", …
};

}  // namespace crisp
