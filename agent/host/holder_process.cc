#include "agent/host/holder_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <thread>

#include "common/cgroups.h"
#include "common/files.h"
#include "common/strings.h"

namespace crisp {

Result<Fd> open_process(int pid, uint64_t start_time) {
  Fd fd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  if (!fd) return fail("pidfd_open " + std::to_string(pid) + ": " + errno_text(errno));
  // Checked after the open: the descriptor names the process that had this start time.
  auto started = process_start_time(pid);
  if (!started || *started != start_time) return fail("process " + std::to_string(pid) + " has exited");
  return fd;
}

void end_process(int pidfd) {
  if (syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0) != 0 && errno == ESRCH) return;
  pollfd p{pidfd, POLLIN, 0};
  // SIGKILL leaves nothing to wait for but the kernel's exit.
  while (poll(&p, 1, 5000) < 0 && errno == EINTR) {
  }
}

namespace {

// Waits until proc (a file of /proc/PID) is owner's: an undumpable process's files
// there are root's, a dumpable one's its own (not /proc/PID itself: always its own).
Status await_proc_owner(const std::string& proc, uint32_t owner, std::chrono::steady_clock::time_point until) {
  auto pause = std::chrono::microseconds(200);
  for (;;) {
    struct stat st {};
    if (stat(proc.c_str(), &st) != 0) return fail("the container's holder is gone: " + errno_text(errno));
    if (st.st_uid == owner) return Ok{};
    if (std::chrono::steady_clock::now() > until) return fail("the container's holder did not answer crispd's signal");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20000));
  }
}

}  // namespace

Status release_holder(int pid, uint32_t uid, std::chrono::milliseconds timeout) {
  if (uid == 0) return Ok{};
  std::string proc = "/proc/" + std::to_string(pid) + "/environ";
  auto until = std::chrono::steady_clock::now() + timeout;
  // Undumpable first: by then it has blocked the signal, which would otherwise be lost (its default: ignored).
  if (auto s = await_proc_owner(proc, 0, until); !s) return s;
  if (kill(pid, SIGURG) != 0) return fail("cannot signal the container's holder: " + errno_text(errno));
  return await_proc_owner(proc, uid, until);
}

std::vector<Fd> cgroup_procs_of(int pid) {
  std::vector<Fd> out;
  auto text = read_text("/proc/" + std::to_string(pid) + "/cgroup", 1u << 16);
  if (!text) return out;
  for (const CgroupOf& c : parse_proc_cgroup(*text)) {
    std::string dir = c.controllers.empty() ? unified_dir() : hierarchy_dir(c.controllers);
    if (Fd procs(open((dir + c.path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC)); procs) out.push_back(std::move(procs));
  }
  return out;
}

}  // namespace crisp
