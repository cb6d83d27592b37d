#include "agent/host/holder_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

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

}  // namespace crisp
