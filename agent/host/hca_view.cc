#include "agent/host/hca_view.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include "common/files.h"
#include "common/strings.h"

namespace crisp {

Status make_hca_view(const std::string& class_dir, const std::vector<std::string>& hca_names, const std::string& dir) {
  remove_hca_view(dir);
  std::string parent = dir.substr(0, dir.rfind('/'));
  if (mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) return fail("cannot create " + parent + ": " + errno_text(errno));
  if (mkdir(dir.c_str(), 0755) != 0) return fail("cannot create " + dir + ": " + errno_text(errno));
  for (const std::string& name : hca_names) {
    char target[PATH_MAX];
    ssize_t n = readlink((class_dir + "/" + name).c_str(), target, sizeof target - 1);
    if (n < 0) return fail("cannot read " + class_dir + "/" + name + ": " + errno_text(errno));
    if (symlink(std::string(target, static_cast<size_t>(n)).c_str(), (dir + "/" + name).c_str()) != 0)
      return fail("cannot link " + name + " in " + dir + ": " + errno_text(errno));
  }
  return Ok{};
}

void remove_hca_view(const std::string& dir) {
  for (const std::string& name : list_dir(dir)) unlink((dir + "/" + name).c_str());
  rmdir(dir.c_str());
}

}  // namespace crisp
