#include "spank/join.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <string>
#include <utility>

#include "common/files.h"
#include "common/layout.h"
#include "common/strings.h"

namespace crisp {

Result<Fd> open_holder_mount_ns(int holder_pid, uint64_t start_time, const char* holder_path_inside) {
  const Error gone = fail("the step's container exited before its tasks could join it");
  // A pidfd, then the start time: if they match crispd's, the pidfd is the
  // holder's, not that of a process which got its pid after it exited.
  Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, holder_pid, 0)));
  if (!pidfd) return gone;
  if (start_time != 0) {
    auto started = process_start_time(holder_pid);
    if (!started || *started != start_time) return gone;
  }
  std::string proc = "/proc/" + std::to_string(holder_pid);
  Fd fd(open((proc + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return fail("cannot open the container's mount namespace: " + errno_text(errno));
  // Still alive after the open: /proc/PID was the holder's when it was opened.
  if (syscall(SYS_pidfd_send_signal, pidfd.get(), 0, nullptr, 0) != 0) return gone;
  char exe[PATH_MAX];
  ssize_t n = readlink((proc + "/exe").c_str(), exe, sizeof exe - 1);
  if (n < 0 || std::string(exe, static_cast<size_t>(n)) != holder_path_inside)
    return fail("the step's container exited before its tasks could join it");
  return fd;
}

Result<Fd> open_process_ns(int pid, const char* name) {
  Fd fd(open(("/proc/" + std::to_string(pid) + "/ns/" + name).c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return fail("cannot open the step's " + std::string(name) + " namespace: " + errno_text(errno));
  return fd;
}

Status enter_ns(int ns_fd, const char* what) {
  if (setns(ns_fd, 0) != 0) return fail("cannot enter the step's " + std::string(what) + " namespace: setns: " + errno_text(errno));
  return Ok{};
}

namespace {

// An opened namespace, kept with what it names.
Result<HeldNs> held(Result<Fd> fd) {
  if (!fd) return fd.take_error();
  return HeldNs::hold(std::move(*fd));
}

}  // namespace

Result<StepNamespaces> StepNamespaces::open(const v1::CreateStepResponse& c, const char* holder_path_inside) {
  int pid = c.session_pid() != 0 ? c.session_pid() : c.holder_pid();
  uint64_t start = c.session_pid() != 0 ? c.session_start_time() : c.holder_start_time();
  StepNamespaces ns;
  const std::pair<bool, std::pair<const char*, HeldNs*>> wanted[] = {
      {c.session_userns(), {"user", &ns.user}},
      {(c.unshare() & kUnshareNet) != 0, {"net", &ns.net}},
      {(c.unshare() & kUnshareIpc) != 0, {"ipc", &ns.ipc}},
      {(c.unshare() & kUnshareUts) != 0, {"uts", &ns.uts}}};
  // Before the mount namespace: its check of the process covers these too.
  for (const auto& [want, one] : wanted) {
    if (!want || c.session_pid() == 0) continue;
    auto opened = held(open_process_ns(pid, one.first));
    if (!opened) return opened.take_error();
    *one.second = std::move(*opened);
  }
  auto opened = held(open_holder_mount_ns(pid, start, holder_path_inside));
  if (!opened) return opened.take_error();
  ns.mnt = std::move(*opened);
  return ns;
}

bool StepNamespaces::held_here() const {
  for (const HeldNs* one : {&mnt, &user, &net, &ipc, &uts})
    if (one->recorded() && one->here() < 0) return false;
  return true;
}

Status join_mount_ns(int ns_fd) {
  if (setns(ns_fd, CLONE_NEWNS) != 0) return fail("cannot enter the container: setns: " + errno_text(errno));
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail("prctl(PR_SET_NO_NEW_PRIVS): " + errno_text(errno));
  return Ok{};
}

}  // namespace crisp
