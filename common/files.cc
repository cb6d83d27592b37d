#include "common/files.h"

#include <dirent.h>
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "common/fd.h"
#include "common/strings.h"

namespace crisp {

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> out;
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) return out;
  while (dirent* e = readdir(d.get()))
    if (e->d_name[0] != '.') out.emplace_back(e->d_name);
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::string> read_text(const std::string& path, size_t max_bytes) {
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return fail("cannot read " + path + ": " + errno_text(errno));
  std::string data;
  char buf[8192];
  for (;;) {
    ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot read " + path + ": " + errno_text(errno));
    if (n == 0) return data;
    if (data.size() + static_cast<size_t>(n) > max_bytes)
      return fail(path + " is larger than " + std::to_string(max_bytes) + " bytes");
    data.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace crisp
