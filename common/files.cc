#include "common/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <sstream>

#include "common/fd.h"
#include "common/strings.h"

namespace crisp {

Fd open_at(int dirfd, const std::string& path, uint64_t flags, uint64_t resolve) {
  open_how how{};
  how.flags = flags | O_CLOEXEC;
  how.resolve = resolve;
  size_t start = path.find_first_not_of('/');
  std::string rel = start == std::string::npos ? "." : path.substr(start);
  return Fd(static_cast<int>(syscall(SYS_openat2, dirfd, rel.c_str(), &how, sizeof how)));
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> out;
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) return out;
  while (dirent* e = readdir(d.get()))
    if (e->d_name[0] != '.') out.emplace_back(e->d_name);
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::string> read_up_to(int fd, size_t limit) {
  std::string data;
  char buf[8192];
  while (data.size() < limit) {
    ssize_t n = read(fd, buf, std::min(sizeof buf, limit - data.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(errno_text(errno));
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  return data;
}

Result<std::string> read_text(const std::string& path, size_t max_bytes) {
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return fail("cannot read " + path + ": " + errno_text(errno));
  auto data = read_up_to(fd.get(), max_bytes + 1);
  if (!data) return fail("cannot read " + path + ": " + data.error());
  if (data->size() > max_bytes) return fail(path + " is larger than " + std::to_string(max_bytes) + " bytes");
  return data;
}

bool process_gone(int pid) { return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH; }

namespace {

// Field n (counted from 1, as proc(5) does; n >= 3) of /proc/PID/stat.
Result<uint64_t> stat_field(int pid, int n) {
  auto stat = read_text("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!stat) return stat.take_error();
  // The command name (field 2) may hold spaces and parentheses: count after the last ')'.
  size_t p = stat->rfind(')');
  if (p == std::string::npos) return fail("process " + std::to_string(pid) + ": malformed stat");
  std::istringstream rest(stat->substr(p + 1));
  std::string field;
  for (int i = 3; i <= n && rest >> field; ++i)
    if (i == n) return static_cast<uint64_t>(std::strtoull(field.c_str(), nullptr, 10));
  return fail("process " + std::to_string(pid) + ": malformed stat");
}

}  // namespace

Result<uint64_t> process_start_time(int pid) { return stat_field(pid, 22); }

bool process_exiting(int pid) {
  constexpr uint64_t kPfExiting = 0x4;  // the kernel's PF_EXITING
  auto flags = stat_field(pid, 9);
  return !flags || (*flags & kPfExiting);
}

}  // namespace crisp
