#include "agent/host/site_hook.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/host/entrypoint.h"
#include "agent/host/holder_process.h"
#include "common/fd.h"
#include "common/files.h"
#include "common/strings.h"
#include "common/subprocess.h"

namespace crisp {
namespace {

// What a hook appended to one of its files, from the start, bounded.
Result<std::string> appended(int fd, const std::string& hook, const char* name) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return fail(std::string(name) + ": " + errno_text(errno));
  if (static_cast<size_t>(st.st_size) > kMaxHookFileBytes)
    return fail("the site's hook " + hook + " wrote more than 1 MiB to " + name + ": tell your admin");
  if (lseek(fd, 0, SEEK_SET) != 0) return fail(std::string(name) + ": " + errno_text(errno));
  return read_up_to(fd, kMaxHookFileBytes);
}

// In the child (system calls only): into the container's cgroups, then the user's ids, not
// dumpable until its exec (crispd's descriptors are still open: fs.suid_dumpable=1 would
// leave them to the user's /proc/PID/fd), SIGPIPE as a program expects it.
bool enter(const std::vector<Fd>& cgroups, const std::optional<UserCreds>& user) {
  for (const Fd& c : cgroups)
    if (write(c.get(), "0", 1) != 1) return false;
  if (chdir("/") != 0 || signal(SIGPIPE, SIG_DFL) == SIG_ERR) return false;
  return !user || (take_user_ids(user->uid, user->gid, user->groups) && prctl(PR_SET_DUMPABLE, 0) == 0);
}

// Whether the process the pidfd holds still runs (its pid is then still its own).
bool still_runs(const Fd& pidfd) { return syscall(SYS_pidfd_send_signal, pidfd.get(), 0, nullptr, 0) == 0; }

Status outcome(const Result<ProcessResult>& ran, const std::string& hook) {
  if (!ran && ran.error_kind() == ErrorKind::kTimedOut)
    return fail(ErrorKind::kTimedOut, "the site's hook " + hook + " did not finish within its time: tell your admin");
  if (!ran) return fail("the site's hook " + hook + " could not run: " + ran.error() + ": tell your admin");
  if (ran->succeeded()) return Ok{};
  std::string said = last_lines(ran->err.empty() ? ran->out : ran->err, 1, 200);
  for (char& c : said)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';  // one line, no terminal controls
  return fail("the site's hook " + hook + " failed (" + ran->status_text() + ")" + (said.empty() ? "" : ": " + said));
}

}  // namespace

Result<SiteHookOutput> run_site_hook(const SiteHookRun& run) {
  Fd environ_fd(memfd_create("crisp-hook-environ", MFD_CLOEXEC)), mounts_fd(memfd_create("crisp-hook-mounts", MFD_CLOEXEC));
  if (!environ_fd || !mounts_fd) return fail("memfd_create: " + errno_text(errno));
  auto holder = open_process(run.holder_pid, run.holder_start);
  std::string gone = "the site's hook " + run.path + " could not run: the step's container exited";
  if (!holder) return fail(gone);
  std::vector<Fd> cgroups;
  if (run.in_container_cgroups) cgroups = cgroup_procs_of(run.holder_pid);
  if (!still_runs(*holder) || (run.in_container_cgroups && cgroups.empty())) return fail(gone);
  std::string pid = std::to_string(run.holder_pid);
  ProcessSpec spec;
  spec.path = run.path;
  spec.env = run.env;
  spec.env->push_back("ENROOT_PID=" + pid);
  if (run.as_user) spec.env->push_back("ENROOT_ROOTFS=/proc/" + pid + "/root");
  spec.env->push_back("ENROOT_ENVIRON=/dev/fd/3");
  spec.env->push_back("ENROOT_MOUNTS=/dev/fd/4");
  spec.timeout = run.timeout;
  spec.max_output = kMaxHookOutputBytes;
  spec.pass_fds = {environ_fd.get(), mounts_fd.get()};
  spec.own_pid_namespace = true;
  spec.prepare = [&] { return enter(cgroups, run.as_user); };
  if (auto s = outcome(run_process(spec), run.path); !s) return s.take_error();
  if (!still_runs(*holder)) return fail("the step's container exited while the site's hook " + run.path + " ran");
  auto environ_text = appended(environ_fd.get(), run.path, "ENROOT_ENVIRON");
  if (!environ_text) return environ_text.take_error();
  auto mounts_text = appended(mounts_fd.get(), run.path, "ENROOT_MOUNTS");
  if (!mounts_text) return mounts_text.take_error();
  return SiteHookOutput{std::move(*environ_text), std::move(*mounts_text)};
}

}  // namespace crisp
