#include "agent/host/child_steps.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "common/fd.h"
#include "common/strings.h"

namespace crisp {

Result<ChildAnswer> run_child_steps(const std::function<int()>& steps, int timeout_ms) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return fail("pipe: " + errno_text(errno));
  Fd rd(report[0]), wr(report[1]);
  pid_t child = fork();
  if (child < 0) return fail("fork: " + errno_text(errno));
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int step = steps();
    int answer[2] = {step, errno};
    (void)!write(wr.get(), answer, sizeof answer);
    _exit(0);
  }
  wr.reset();
  int answer[2] = {-1, 0};
  pollfd p{rd.get(), POLLIN, 0};
  ssize_t got = poll(&p, 1, timeout_ms) == 1 ? read(rd.get(), answer, sizeof answer) : 0;
  if (got <= 0) kill(child, SIGKILL);
  // Its exit (unmapping a copy of crispd) is no part of the step's launch: reaped aside.
  std::thread([child] {
    while (waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
  }).detach();
  if (got != static_cast<ssize_t>(sizeof answer) || answer[0] < 0) return fail("the child process died or hung");
  return ChildAnswer{answer[0], answer[1]};
}

}  // namespace crisp
