#include "spank/join.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <string>

#include "common/strings.h"

namespace crisp {

Result<int> open_holder_mount_ns(int holder_pid, const char* holder_path_inside) {
  std::string proc = "/proc/" + std::to_string(holder_pid);
  int fd = open((proc + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail("cannot open the container's mount namespace: " + errno_text(errno));
  // Checked after the open: the fd then surely belongs to the holder.
  char exe[PATH_MAX];
  ssize_t n = readlink((proc + "/exe").c_str(), exe, sizeof exe - 1);
  if (n < 0 || std::string(exe, static_cast<size_t>(n)) != holder_path_inside) {
    close(fd);
    return fail("the step's container exited before its tasks could join it");
  }
  return fd;
}

Status join_mount_ns(int ns_fd) {
  if (setns(ns_fd, CLONE_NEWNS) != 0) return fail("cannot enter the container: setns: " + errno_text(errno));
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail("prctl(PR_SET_NO_NEW_PRIVS): " + errno_text(errno));
  return Ok{};
}

}  // namespace crisp
