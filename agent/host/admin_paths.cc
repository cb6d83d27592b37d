#include "agent/host/admin_paths.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "common/strings.h"

namespace crisp {
namespace {

// in_shared: the component's directory is one others may write (sticky, or it was refused).
Status check_component(const std::string& at, const struct stat& st, bool walked_through, bool in_shared) {
  if (S_ISLNK(st.st_mode)) return fail(ErrorKind::kRefused, at + " is a symlink: name the path it leads to");
  if (st.st_uid > kSystemUidMax)
    return fail(ErrorKind::kRefused, at + " belongs to uid " + std::to_string(st.st_uid) + ", not a system account");
  if (walked_through && others_may_write(st) && !(st.st_mode & S_ISVTX))
    return fail(ErrorKind::kRefused, at + " may be written by others than its owner (and is not sticky)");
  // A user may link a root file they cannot read into a sticky directory under the name
  // the admin gave (where the kernel allows: fs.protected_hardlinks=0).
  if (in_shared && !S_ISDIR(st.st_mode) && st.st_nlink > 1)
    return fail(ErrorKind::kRefused, at + " has other links, in a directory others may write");
  return Ok{};
}

// The component, as a directory where it is one (O_DIRECTORY has an automount point mount),
// else as what it is (a file, or a symlink: O_NOFOLLOW opens the link itself).
Fd open_component(int at, const std::string& name) {
  Fd fd(openat(at, name.c_str(), O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC));
  if (!fd && errno == ENOTDIR) fd.reset(openat(at, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  return fd;
}

}  // namespace

Result<UserPath> open_admin_path(const std::string& path) {
  if (path.empty() || path.front() != '/') return fail("not an absolute path: " + path);
  Fd at(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!at) return fail("/: " + errno_text(errno));
  std::vector<std::string> parts;
  for (const std::string& p : split(path, '/'))
    if (!p.empty() && p != ".") parts.push_back(p);
  std::string walked;
  struct stat st {};
  if (fstat(at.get(), &st) != 0) return fail("/: " + errno_text(errno));
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i] == "..") return fail(ErrorKind::kRefused, "\"..\" in " + path);
    walked += "/" + parts[i];
    bool last = i + 1 == parts.size(), in_shared = others_may_write(st);
    Fd next = open_component(at.get(), parts[i]);
    if (!next && errno == ENOENT) return fail(ErrorKind::kNotFound, walked + " does not exist");
    if (!next) return fail(walked + ": " + errno_text(errno));
    if (fstat(next.get(), &st) != 0) return fail(walked + ": " + errno_text(errno));
    if (auto s = check_component(walked, st, !last, in_shared); !s) return s.take_error();
    if (!last && !S_ISDIR(st.st_mode)) return fail(ErrorKind::kNotFound, walked + " is not a directory");
    at = std::move(next);
  }
  return UserPath{std::move(at), path, S_ISDIR(st.st_mode)};
}

}  // namespace crisp
