#include "agent/host/entrypoint.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <mutex>
#include <thread>

#include "agent/host/holder_process.h"
#include "agent/host/user_access.h"
#include "common/fd.h"
#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/subprocess.h"

namespace crisp {

Status prepare_log_directory(const std::string& dir, uint64_t size) {
  static std::mutex mounting;  // two creates must not stack two tmpfs there
  std::lock_guard lock(mounting);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return fail("cannot create " + dir + ": " + errno_text(errno));
  struct stat here {}, parent {};
  if (stat(dir.c_str(), &here) != 0 || stat((dir + "/..").c_str(), &parent) != 0)
    return fail("cannot stat " + dir + ": " + errno_text(errno));
  if (here.st_dev != parent.st_dev) return Ok{};  // mounted already
  std::string opts = "mode=0700,size=" + std::to_string(size);
  if (mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts.c_str()) != 0)
    return fail("cannot mount a tmpfs on " + dir + ": " + errno_text(errno));
  return Ok{};
}

Status await_holder(int pid, const std::string& holder_exe, std::chrono::seconds timeout,
                    const std::function<void()>& tick) {
  std::string exe_link = "/proc/" + std::to_string(pid) + "/exe";
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    char exe[PATH_MAX];
    ssize_t n = readlink(exe_link.c_str(), exe, sizeof exe - 1);
    if (n < 0 && errno == ENOENT) return fail("exited before it ran the holder");
    if (n > 0 && std::string(exe, static_cast<size_t>(n)) == holder_exe) return Ok{};
    if (std::chrono::steady_clock::now() > deadline)
      return fail("did not run the holder within " + std::to_string(timeout.count()) + " s");
    if (tick) tick();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Result<int> start_entrypoint_in_root(const RootEntrypoint& e) {
  std::string proc = "/proc/" + std::to_string(e.holder_pid);
  Fd ns(open((proc + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC));
  Fd out(open((proc + "/fd/1").c_str(), O_WRONLY | O_CLOEXEC)), err(open((proc + "/fd/2").c_str(), O_WRONLY | O_CLOEXEC));
  Fd null(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!ns || !out || !err || !null) return fail("cannot open the container's namespace and streams: " + errno_text(errno));
  std::vector<Fd> cgroups = cgroup_procs_of(e.holder_pid);
  if (cgroups.empty()) return fail("cannot find the container's cgroups");
  std::vector<std::string> args = e.argv, env = e.env;
  std::vector<char*> argv = c_strings(args), envp = c_strings(env);
  pid_t pid = fork();
  if (pid < 0) return fail("fork: " + errno_text(errno));
  if (pid == 0) {
    bool ok = true;
    for (const Fd& c : cgroups) ok = ok && write(c.get(), "0", 1) == 1;
    ok = ok && setns(ns.get(), CLONE_NEWNS) == 0 && chdir("/") == 0 && dup2(null.get(), 0) == 0 &&
         dup2(out.get(), 1) == 1 && dup2(err.get(), 2) == 2 && syscall(SYS_close_range, 3, ~0u, 0) == 0 &&
         prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && take_user_ids(e.uid, e.gid, e.groups);
    if (ok) {
      environ = envp.data();  // execvp looks PATH up in the image's environment
      execvp(argv[0], argv.data());
    }
    _exit(127);
  }
  return static_cast<int>(pid);
}

Result<std::vector<std::string>> holder_environment(int pid) {
  auto text = read_text("/proc/" + std::to_string(pid) + "/environ", 1u << 20);
  if (!text) return text.take_error();
  std::vector<std::string> env;
  for (std::string& kv : split(*text, '\0'))
    if (!kv.empty()) env.push_back(std::move(kv));
  return env;
}

bool parse_cri_log_line(const std::string& line, std::string& message) {
  // 2024-01-02T03:04:05.000000000Z stdout F text
  size_t a = line.find(' ');
  size_t b = a == std::string::npos ? a : line.find(' ', a + 1);
  size_t c = b == std::string::npos ? b : line.find(' ', b + 1);
  if (c == std::string::npos) return false;
  std::string stream = line.substr(a + 1, b - a - 1);
  if (stream != "stdout" && stream != "stderr") return false;
  message = line.substr(c + 1);
  return true;
}

namespace {

// The last max_bytes of a file, raw; cut: the file began before them.
struct FileTail {
  std::string text;
  bool cut = false;
};
FileTail file_tail(const std::string& path, size_t max_bytes) {
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!fd || fstat(fd.get(), &st) != 0) return {};
  bool cut = st.st_size > static_cast<off_t>(max_bytes);
  if (cut && lseek(fd.get(), st.st_size - static_cast<off_t>(max_bytes), SEEK_SET) < 0) return {"", cut};
  auto text = read_up_to(fd.get(), max_bytes);
  return {text ? *text : "", cut};
}

std::string messages_of(const std::string& raw, bool cut) {
  std::vector<std::string> lines = split(raw, '\n');
  std::string out, message;
  for (size_t i = cut ? 1 : 0; i < lines.size(); ++i)  // a line cut in two is dropped
    if (parse_cri_log_line(lines[i], message)) out += message + "\n";
  return out;
}

// The runtime copies output to the file on its own time: wait until its size
// holds still for 100 ms (at most 2 s).
void wait_until_still(const std::string& path) {
  off_t last = -1;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (int still = 0; still < 10 && std::chrono::steady_clock::now() < deadline;) {
    struct stat st {};
    off_t size = stat(path.c_str(), &st) == 0 ? st.st_size : -1;
    still = size == last ? still + 1 : 0;
    last = size;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

void CriLogTail::keep(const std::string& raw) {
  kept_ += raw;
  if (kept_.size() > max_) kept_.erase(0, kept_.size() - max_);
}

void CriLogTail::rotate_if_large() {
  struct stat st {};
  if (stat(path_.c_str(), &st) != 0 || st.st_size <= static_cast<off_t>(2 * max_)) return;
  std::string old = path_ + ".old";
  if (rename(path_.c_str(), old.c_str()) != 0) return;
  // The runtime writes on to the renamed file until it reopens the path.
  if (auto s = reopen_(); !s) log_warn("cannot reopen the container's log " + path_ + ": " + s.error());
  keep(file_tail(old, max_).text);
  unlink(old.c_str());
}

std::string CriLogTail::messages() {
  wait_until_still(path_);
  FileTail rest = file_tail(path_, max_);
  bool began_before = !kept_.empty() || rest.cut;
  keep(rest.text);
  return messages_of(kept_, began_before);
}

Status silence_cri_log(const std::string& path) {
  std::string link = path + ".null";
  unlink(link.c_str());
  if (symlink("/dev/null", link.c_str()) != 0 || rename(link.c_str(), path.c_str()) != 0)
    return fail("cannot replace " + path + ": " + errno_text(errno));
  return Ok{};
}

std::string last_lines(const std::string& text, size_t lines, size_t max_bytes) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  size_t start = t.size();
  for (size_t n = 0; n < lines && start > 0; ++n) {
    size_t nl = t.rfind('\n', start - 1);
    start = nl == std::string::npos ? 0 : nl;
    if (nl == std::string::npos) break;
  }
  std::string out = t.substr(start == 0 || t[start] != '\n' ? start : start + 1);
  if (out.size() > max_bytes) out = "..." + out.substr(out.size() - max_bytes);
  for (char& ch : out)
    if (ch == '\n') ch = ' ';
  return out;
}

}  // namespace crisp
