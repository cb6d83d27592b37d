#include "agent/metrics/metrics_server.h"

#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <prometheus/text_serializer.h>

#include "common/log.h"
#include "common/passwd.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "common/wire.h"

namespace crisp {

namespace {

constexpr std::chrono::seconds kIoTimeout{5};
constexpr size_t kMaxQuestion = 64;  // the relay's question is one word

// In the forked child of a threaded process: system calls only. Descriptor 3 is the
// relay's end of the pair; everything else above 2 is closed, the ids are nobody's.
[[noreturn]] void exec_relay(int fd, uid_t uid, gid_t gid, pid_t parent, char** argv) {
  bool ok = only_descriptors_from_3({&fd, 1}) && setgroups(0, nullptr) == 0 && setgid(gid) == 0 && setuid(uid) == 0 &&
            prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 &&
            getppid() == parent;
  if (ok) execv(argv[0], argv);
  _exit(127);
}

}  // namespace

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(RelaySettings settings, const Metrics& metrics) {
  if (access(settings.relay.c_str(), X_OK) != 0)
    return fail("the metrics relay " + settings.relay + " is not executable: " + errno_text(errno));
  auto user = lookup_user(settings.user);
  if (!user) return fail("no user " + settings.user + " to run the metrics relay as");
  Fd stop(eventfd(0, EFD_CLOEXEC));
  if (!stop) return fail("eventfd: " + errno_text(errno));
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(settings), user->first, user->second, metrics,
                                                          std::move(stop)));
}

MetricsServer::MetricsServer(RelaySettings settings, uint32_t uid, uint32_t gid, const Metrics& metrics, Fd stop)
    : settings_(std::move(settings)), uid_(uid), gid_(gid), metrics_(metrics), stop_(std::move(stop)) {
  thread_ = std::thread([this] { supervise(); });
}

MetricsServer::~MetricsServer() {
  uint64_t one = 1;
  if (write(stop_.get(), &one, sizeof one) != sizeof one) log_warn("stopping the metrics relay: " + errno_text(errno));
  thread_.join();
}

Result<MetricsServer::Relay> MetricsServer::spawn() {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return fail("socketpair: " + errno_text(errno));
  Fd ours(pair[0]), theirs(pair[1]);
  std::vector<std::string> args = {settings_.relay, settings_.address};
  std::vector<char*> argv = c_strings(args);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return fail("fork: " + errno_text(errno));
  if (pid == 0) exec_relay(theirs.get(), uid_, gid_, parent, argv.data());
  Relay relay{pid, Fd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0))), std::move(ours)};
  if (!relay.pidfd) {
    std::string why = errno_text(errno);
    reap(relay);
    return fail("pidfd_open: " + why);
  }
  return relay;
}

bool MetricsServer::serve(const Relay& relay) {
  prometheus::TextSerializer text;
  while (true) {
    pollfd p[3] = {{stop_.get(), POLLIN, 0}, {relay.pidfd.get(), POLLIN, 0}, {relay.socket.get(), POLLIN, 0}};
    if (poll(p, 3, -1) < 0) {
      if (errno == EINTR) continue;
      log_error("metrics: poll: " + errno_text(errno));
      return true;
    }
    if (p[0].revents) return true;
    if (p[1].revents) return false;
    // A question, answered; a relay that says anything else, or reads no answer, is ended.
    if (!read_frame(relay.socket.get(), Deadline(kIoTimeout), kMaxQuestion)) return false;
    if (auto s = write_frame(relay.socket.get(), text.Serialize(metrics_.collect()), Deadline(kIoTimeout)); !s) {
      log_warn("metrics: the relay took no answer: " + s.error());
      return false;
    }
  }
}

std::string MetricsServer::reap(Relay& relay) {
  if (relay.pidfd) (void)syscall(SYS_pidfd_send_signal, relay.pidfd.get(), SIGKILL, nullptr, 0);
  else kill(relay.pid, SIGKILL);
  int status = 0;
  while (waitpid(relay.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  return "signal " + std::to_string(WTERMSIG(status));
}

void MetricsServer::supervise() {
  auto backoff = std::chrono::seconds(1);
  while (true) {
    auto began = std::chrono::steady_clock::now();
    auto relay = spawn();
    if (!relay) log_error("metrics: cannot start " + settings_.relay + ": " + relay.error());
    else log_info("metrics relay started (pid " + std::to_string(relay->pid) + ", as " + settings_.user + ") for http://" +
                  settings_.address + "/metrics");
    if (relay && serve(*relay)) {
      reap(*relay);
      return;
    }
    // Its stderr, crispd's, says why it exited.
    if (relay) log_warn("metrics: the relay ended (" + reap(*relay) + "); again in " + std::to_string(backoff.count()) + " s");
    if (std::chrono::steady_clock::now() - began > std::chrono::minutes(1)) backoff = std::chrono::seconds(1);
    pollfd p{stop_.get(), POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::chrono::milliseconds(backoff).count())) > 0) return;
    backoff = std::min(backoff * 2, std::chrono::seconds(60));
  }
}

double resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  double size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<double>(sysconf(_SC_PAGESIZE));
}

double open_descriptors() {
  std::error_code ec;
  double n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) n++;
  return ec || n == 0 ? 0 : n - 1;  // the directory's own
}

}  // namespace crisp
