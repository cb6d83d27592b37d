#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <iterator>
#include <thread>

#include "common/fd.h"
#include "common/strings.h"
#include "common/wire.h"

extern char** environ;

namespace crisp {
namespace {

struct Pipe {
  Fd read, write;
};

Result<Pipe> make_pipe() {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return fail("pipe: " + errno_text(errno));
  return Pipe{Fd(p[0]), Fd(p[1])};
}

// stdin is a socket pair, not a pipe: send(MSG_NOSIGNAL) to a program that
// exited unread fails with EPIPE instead of raising SIGPIPE in the caller.
Result<Pipe> make_input() {
  int p[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) != 0) return fail("socketpair: " + errno_text(errno));
  if (shutdown(p[0], SHUT_WR) != 0 || shutdown(p[1], SHUT_RD) != 0) return fail("shutdown: " + errno_text(errno));
  return Pipe{Fd(p[0]), Fd(p[1])};
}

}  // namespace

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

namespace {

// Feeds input and drains both outputs until they close or the deadline passes.
Status pump(Fd& in, Fd& out, Fd& err, const std::string& input, ProcessResult& r, size_t max, const Deadline& deadline) {
  size_t written = 0;
  if (input.empty()) in.reset();
  std::string* sinks[] = {nullptr, &r.out, &r.err};
  Fd* fds[] = {&in, &out, &err};
  while (out.valid() || err.valid()) {
    pollfd p[3];
    for (int i = 0; i < 3; ++i) p[i] = {fds[i]->get(), static_cast<short>(i == 0 ? POLLOUT : POLLIN), 0};
    int n = poll(p, 3, deadline.remaining_ms());
    if (n == 0) return fail(ErrorKind::kTimedOut, "timed out");
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("poll: " + errno_text(errno));
    }
    if (p[0].revents) {
      ssize_t w = send(in.get(), input.data() + written, input.size() - written, MSG_NOSIGNAL | MSG_DONTWAIT);
      // A program may exit without reading its input (EPIPE).
      if (w < 0 && errno != EAGAIN && errno != EINTR) in.reset();
      if (w > 0 && (written += static_cast<size_t>(w)) == input.size()) in.reset();
    }
    for (int i = 1; i < 3; ++i) {
      if (!p[i].revents) continue;
      char buf[4096];
      ssize_t got = read(fds[i]->get(), buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) fds[i]->reset();
      else if (sinks[i]->size() < max) sinks[i]->append(buf, std::min(static_cast<size_t>(got), max - sinks[i]->size()));
    }
  }
  return Ok{};
}

// Waits for pid, killing it first (kill_first) or once the deadline passes; fills exit_code/signal.
Status reap(pid_t pid, ProcessResult& r, const Deadline& deadline, bool kill_first) {
  bool killed = kill_first;
  if (killed) kill(pid, SIGKILL);
  int status = 0;
  for (;;) {
    pid_t w = waitpid(pid, &status, killed ? 0 : WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return fail("waitpid: " + errno_text(errno));
    if (w != 0) continue;
    if (deadline.remaining_ms() > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    kill(pid, SIGKILL);
    killed = true;
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  else r.signal = WTERMSIG(status);
  if (killed && !kill_first) return fail(ErrorKind::kTimedOut, "timed out");
  return Ok{};
}

// posix_spawn with the pipes as its streams and nothing else of crispd's.
Result<pid_t> spawn(const std::string& path, std::vector<char*>& argv, std::vector<char*>& envp, bool own_env,
                    const Pipe& in, const Pipe& out, const Pipe& err) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  // dup2 clears O_CLOEXEC on the child's copies only.
  posix_spawn_file_actions_adddup2(&fa, in.read.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, out.write.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, err.write.get(), STDERR_FILENO);
  // Nothing else of crispd's reaches the program, whoever opened it without O_CLOEXEC.
  posix_spawn_file_actions_addclosefrom_np(&fa, STDERR_FILENO + 1);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, path.c_str(), &fa, nullptr, argv.data(), own_env ? envp.data() : environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return fail(path + " cannot run: " + errno_text(rc));
  return pid;
}

}  // namespace

std::string ProcessResult::status_text() const {
  return exit_code >= 0 ? "exit status " + std::to_string(exit_code) : "signal " + std::to_string(signal);
}

bool only_descriptors_from_3(std::span<const int> fds) {
  // First above every target, so no dup2 overwrites a descriptor still to be placed.
  int first = 3 + static_cast<int>(fds.size()), high[8];
  if (fds.size() > std::size(high)) return false;
  for (size_t i = 0; i < fds.size(); ++i)
    if ((high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, first)) < 0) return false;
  for (size_t i = 0; i < fds.size(); ++i)
    if (dup2(high[i], 3 + static_cast<int>(i)) < 0) return false;  // dup2 clears O_CLOEXEC
  return syscall(SYS_close_range, first, ~0u, 0) == 0;
}

namespace {

// fork(), or a clone into a new PID namespace (the child is its process 1).
pid_t fork_child(bool own_pid_namespace) {
  if (!own_pid_namespace) return fork();
  return static_cast<pid_t>(syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, nullptr, nullptr, nullptr, nullptr));
}

}  // namespace

Result<ProcessResult> run_process(const ProcessSpec& spec) {
  std::vector<std::string> args = spec.argv;
  std::string path = spec.path.empty() && !args.empty() ? args[0] : spec.path;
  if (path.empty()) return fail("no program to run");
  if (args.empty()) args.push_back(path);
  std::vector<std::string> env = spec.env.value_or(std::vector<std::string>{});
  std::vector<char*> argv = c_strings(args), envp = c_strings(env);
  auto in = make_input(), out = make_pipe(), err = make_pipe();
  if (!in) return in.take_error();
  if (!out) return out.take_error();
  if (!err) return err.take_error();
  pid_t pid = 0;
  if (spec.prepare || !spec.pass_fds.empty() || spec.own_pid_namespace) {
    pid = fork_child(spec.own_pid_namespace);
    if (pid < 0) return fail("fork: " + errno_text(errno));
    if (pid == 0) {
      // First, while crispd's descriptors (a user namespace's) are all where prepare expects them.
      bool ok = !spec.prepare || spec.prepare();
      ok = ok && dup2(in->read.get(), STDIN_FILENO) >= 0 && dup2(out->write.get(), STDOUT_FILENO) >= 0 &&
           dup2(err->write.get(), STDERR_FILENO) >= 0 && only_descriptors_from_3(spec.pass_fds);
      if (ok) execve(path.c_str(), argv.data(), spec.env ? envp.data() : environ);
      _exit(127);
    }
  } else if (auto spawned = spawn(path, argv, envp, spec.env.has_value(), *in, *out, *err); !spawned) {
    return spawned.take_error();
  } else {
    pid = *spawned;
  }
  in->read.reset();
  out->write.reset();
  err->write.reset();
  Deadline deadline(spec.timeout);
  ProcessResult r;
  Status pumped = pump(in->write, out->read, err->read, spec.input, r, spec.max_output, deadline);
  Status reaped = reap(pid, r, deadline, !pumped);
  const Status& s = pumped ? reaped : pumped;
  if (s.ok()) return r;
  if (s.error_kind() != ErrorKind::kTimedOut) return s.take_error();
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(spec.timeout).count();
  return fail(ErrorKind::kTimedOut, path + " did not finish within " + std::to_string(secs) + " s");
}

}  // namespace crisp
