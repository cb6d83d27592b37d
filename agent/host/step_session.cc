#include "agent/host/step_session.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <vector>

#include "agent/host/holder_process.h"
#include "common/files.h"
#include "common/layout.h"
#include "common/strings.h"

namespace crisp {

std::string session_map(uint32_t id) { return "0 " + std::to_string(id) + " 1\n"; }

namespace {

// What goes back on the report pipe: {step, errno}; {kNeedMaps, pid} asks for the maps.
constexpr int kNeedMaps = -1;
constexpr int kChildTimeoutMs = 10000;

// Steps 6 onwards are crisp-holder's session mode's (holder/crisp-holder.c).
constexpr const char* kSteps[] = {
    "", "entering the container", "becoming the user", "making the user namespace", "waiting for its maps",
    "starting the keeper", "making the namespaces", "mounting a private /dev/shm", "mounting a private /dev/mqueue",
    "bringing up loopback"};
constexpr int kLastStep = 9;

void report(int fd, int step, int value) {
  int msg[2] = {step, value};
  (void)!write(fd, msg, sizeof msg);
}

struct KeeperFds {
  int mnt_ns, go, report, null;
};

// The keeper: a grandchild of crispd (init reaps it), the user in a user
// namespace of theirs, then crisp-holder's session mode inside the container.
[[noreturn]] void keeper(const KeeperFds& fds, const SessionRequest& req, char* const* argv) {
  int out = fds.report, step = 1;
  bool ok = setns(fds.mnt_ns, CLONE_NEWNS) == 0;
  if (ok) {
    step = 2;  // the user: the namespace's owner, as their own tasks are
    ok = setgroups(0, nullptr) == 0 && setresgid(req.gid, req.gid, req.gid) == 0 && setresuid(req.uid, req.uid, req.uid) == 0;
  }
  if (ok) {
    step = 3;
    ok = unshare(CLONE_NEWUSER) == 0;
  }
  if (ok) {
    report(out, kNeedMaps, getpid());
    step = 4;
    char go = 0;
    ok = read(fds.go, &go, 1) == 1 && go == 1;
  }
  if (ok) {
    // Nothing of crispd's goes along: /dev/null for 0-2, the report pipe as 3.
    step = 5;
    ok = dup2(fds.null, 0) == 0 && dup2(fds.null, 1) == 1 && dup2(fds.null, 2) == 2 &&
         (fds.report == 3 ? fcntl(3, F_SETFD, 0) == 0 : dup2(fds.report, 3) == 3);
    if (ok) out = 3;
    if (ok && syscall(SYS_close_range, 4, ~0U, 0) == 0) execv(kHolderTarget, argv);
  }
  report(out, step, errno);
  _exit(1);
}

Status write_maps(int pid, const SessionRequest& req) {
  std::string proc = "/proc/" + std::to_string(pid);
  for (const auto& [file, text] : {std::pair{"/setgroups", std::string("deny")}, {"/uid_map", session_map(req.uid)},
                                   {"/gid_map", session_map(req.gid)}}) {
    Fd fd(open((proc + file).c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd || write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
      return fail("cannot write the keeper's " + std::string(file + 1) + ": " + errno_text(errno));
  }
  return Ok{};
}

// One message from the report pipe within the deadline; false: none came.
bool read_report(int fd, std::chrono::steady_clock::time_point deadline, int msg[2]) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  pollfd p{fd, POLLIN, 0};
  return left.count() > 0 && poll(&p, 1, static_cast<int>(left.count())) == 1 &&
         read(fd, msg, 2 * sizeof(int)) == static_cast<ssize_t>(2 * sizeof(int));
}

}  // namespace

Result<SessionKeeper> start_session(const SessionRequest& req) {
  Fd mnt(open(("/proc/" + std::to_string(req.holder_pid) + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC));
  Fd null_fd(open("/dev/null", O_RDWR | O_CLOEXEC));
  int go[2], rep[2];
  if (!mnt || !null_fd) return fail("cannot open the container's mount namespace: " + errno_text(errno));
  if (pipe2(go, O_CLOEXEC) != 0) return fail("pipe: " + errno_text(errno));
  Fd go_rd(go[0]), go_wr(go[1]);
  if (pipe2(rep, O_CLOEXEC) != 0) return fail("pipe: " + errno_text(errno));
  Fd rep_rd(rep[0]), rep_wr(rep[1]);
  std::vector<std::string> args = {kHolderTarget, std::to_string(req.stepd_pid), "session", std::to_string(req.unshare),
                                   req.shm_size};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t first = fork();
  if (first < 0) return fail("fork: " + errno_text(errno));
  if (first == 0) {
    pid_t k = fork();
    if (k == 0) keeper({mnt.get(), go_rd.get(), rep_wr.get(), null_fd.get()}, req, argv.data());
    _exit(k < 0 ? 1 : 0);
  }
  while (waitpid(first, nullptr, 0) < 0 && errno == EINTR) {
  }
  rep_wr.reset();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kChildTimeoutMs);
  int msg[2] = {0, 0};
  if (!read_report(rep_rd.get(), deadline, msg)) return fail("the step's namespace keeper did not start");
  int pid = msg[1];
  if (msg[0] != kNeedMaps) return fail("cannot make the step's namespaces: " + std::string(kSteps[msg[0] > 0 && msg[0] <= kLastStep ? msg[0] : 0]) + ": " + errno_text(msg[1]));
  auto started = process_start_time(pid);
  auto pidfd = started ? open_process(pid, *started) : Result<Fd>(started.take_error());
  if (!pidfd) return fail("the step's namespace keeper exited: " + pidfd.error());
  SessionKeeper out{pid, *started, std::move(*pidfd)};
  char one = 1;
  Status maps = write_maps(pid, req);
  if (maps && write(go_wr.get(), &one, 1) == 1 && read_report(rep_rd.get(), deadline, msg) && msg[0] == 0) return out;
  end_process(out.pidfd.get());
  if (!maps) return maps.take_error();
  int step = msg[0] > 0 && msg[0] <= kLastStep ? msg[0] : 0;
  return fail("cannot make the step's namespaces: " + std::string(step ? kSteps[step] : "the keeper died or hung") +
              (step ? ": " + errno_text(msg[1]) : ""));
}

}  // namespace crisp
