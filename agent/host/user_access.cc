#include "agent/host/user_access.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>

#include "agent/host/light_child.h"
#include "common/deadline.h"
#include "common/passwd.h"
#include "common/strings.h"
#include "common/wire.h"

namespace crisp {

namespace {

// The child's answer: 0 or an errno (or one of ours below), then len bytes,
// with at most one descriptor attached.
struct Reply {
  int32_t err = 0;
  uint32_t len = 0;
};
constexpr int32_t kNotRegular = -1;
constexpr int32_t kTooLarge = -2;

// Where the child answers: the socket, for the header and a descriptor; the bytes too unless
// it shares crispd's memory (a light child), where they are already in the caller's buffer.
struct Channel {
  int sock;
  bool shared;
};

// The child runs only system calls on memory allocated before it was made: another thread
// of crispd may hold a lock meanwhile (a light child shares crispd's heap).
using ChildWork = std::function<void(const Channel&)>;

// How the child is made (light_child.h): light first; whole (a fork taking the user's ids)
// where the light one was refused, which a FUSE mount without allow_other does.
enum class ChildKind { kLight, kWhole };

void send_reply(const Channel& ch, Reply r, int fd = -1, const char* data = nullptr) {
  const int sock = ch.sock;
  iovec iov{&r, sizeof r};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  if (sendmsg(sock, &msg, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof r)) _exit(1);
  for (size_t left = ch.shared ? 0 : r.len; left > 0;) {
    ssize_t n = write(sock, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(1);
    data += n;
    left -= static_cast<size_t>(n);
  }
}

// Nothing of crispd's stays open in a process working with the user's rights, its standard
// streams included: a path such as /proc/self/fd/N or /dev/stdout must not lead to it.
void close_all_but(int sock) {
  if (sock > 0) close_range(0, static_cast<unsigned>(sock) - 1, 0);
  close_range(static_cast<unsigned>(sock) + 1, ~0u, 0);
}

[[noreturn]] void whole_child_main(const UserCreds& creds, int sock, const ChildWork& work) {
  close_all_but(sock);
  if (!take_user_ids(creds.uid, creds.gid, creds.groups)) {
    send_reply({sock, false}, {errno, 0});
    _exit(0);
  }
  // Changing uid left it undumpable unless fs.suid_dumpable is 1 (the kernel's insecure
  // debugging setting): made so here too, so the user can neither trace it nor read its memory.
  if (prctl(PR_SET_DUMPABLE, 0) != 0) _exit(1);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  work({sock, false});
  _exit(0);
}

// Its answer is the socket's: light_child.h's run_light_child reports only how it ended.
int light_child_main(const UserCreds& creds, int sock, const ChildWork& work) {
  close_all_but(sock);
  if (!take_user_file_rights(creds.uid, creds.gid, creds.groups)) {
    send_reply({sock, true}, {errno, 0});
    return 0;
  }
  // Set after the ids, whose change clears it: a child waiting on a file dies with crispd.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  work({sock, true});
  return 0;
}

// Receives the reply header and its descriptor, if any.
Result<Reply> receive_reply(int sock, Fd& fd, const Deadline& deadline) {
  Reply r;
  iovec iov{&r, sizeof r};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  for (;;) {
    pollfd p = {sock, POLLIN, 0};
    int n = poll(&p, 1, deadline.remaining_ms());
    if (n == 0) return fail(ErrorKind::kTimedOut, "did not answer in time");
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("poll: " + errno_text(errno));
    ssize_t got = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got < 0) return fail("recvmsg: " + errno_text(errno));
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      int received = -1;
      std::memcpy(&received, CMSG_DATA(c), sizeof received);
      fd.reset(received);
    }
    if (got != static_cast<ssize_t>(sizeof r)) return fail("ended before answering");
    return r;
  }
}

// The light child's run, whose answer is then waiting on the socket.
Result<Reply> run_light(const UserCreds& creds, const ChildWork& work, int ours, int theirs, Fd& fd,
                        std::chrono::milliseconds timeout) {
  auto ended = run_light_child([&] { return light_child_main(creds, theirs, work); }, timeout);
  if (!ended) return ended.take_error();
  return receive_reply(ours, fd, Deadline(std::chrono::milliseconds(0)));
}

// The whole child's run: it answers while it runs, and is killed once it has (or the deadline passed).
Result<Reply> run_whole(const UserCreds& creds, const ChildWork& work, int ours, Fd& theirs, std::string* data,
                        size_t max, Fd& fd, std::chrono::milliseconds timeout) {
  pid_t pid = fork();
  if (pid < 0) return fail("fork: " + errno_text(errno));
  if (pid == 0) whole_child_main(creds, theirs.get(), work);
  theirs.reset();
  Deadline deadline(timeout);
  auto reply = receive_reply(ours, fd, deadline);
  if (reply && reply->len > max) reply = fail("sent more than was asked");
  if (reply && data && reply->len > 0)
    if (auto s = read_exactly(ours, data->data(), reply->len, deadline); !s) reply = s.take_error();
  // Done or given up: nothing of it may outlive this call. Root may signal it; the user cannot save it.
  kill(pid, SIGKILL);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  return reply;
}

// Runs work in a child with the user's rights. data, if any, is the buffer work reads into,
// sized beyond max before: it ends holding what the child answered (at most max bytes).
Result<Reply> run_as_user(const UserCreds& creds, const ChildWork& work, std::string* data, size_t max, Fd& fd,
                          std::chrono::milliseconds timeout, ChildKind kind = ChildKind::kLight) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return fail("socketpair: " + errno_text(errno));
  Fd ours(sv[0]), theirs(sv[1]);
  auto start = std::chrono::steady_clock::now();
  auto reply = kind == ChildKind::kLight ? run_light(creds, work, ours.get(), theirs.get(), fd, timeout)
                                         : run_whole(creds, work, ours.get(), theirs, data, max, fd, timeout);
  if (kind == ChildKind::kLight && reply && (reply->err == EACCES || reply->err == EPERM)) {
    fd.reset();
    // Within the one deadline.
    auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    return run_as_user(creds, work, data, max, fd, std::max(timeout - spent, std::chrono::milliseconds(1)),
                       ChildKind::kWhole);
  }
  if (reply && reply->len > max) reply = fail("sent more than was asked");
  if (reply && data) data->resize(reply->len);
  return reply;
}

std::string reason(const std::string& path, int32_t err, size_t max_bytes) {
  if (err == kNotRegular) return path + " is not a regular file";
  if (err == kTooLarge) return path + " is larger than " + std::to_string(max_bytes) + " bytes";
  return path + ": " + errno_text(err);
}

}  // namespace

Result<std::optional<std::string>> read_file_as_user(const UserCreds& creds, const std::string& path,
                                                     size_t max_bytes, std::chrono::milliseconds timeout) {
  std::string data(max_bytes + 1, '\0');  // the child's buffer, allocated before it exists
  auto work = [&](const Channel& ch) {
    // O_NONBLOCK: a FIFO opens at once, to be refused as not a regular file.
    int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    struct stat st {};
    struct statfs fs {};
    if (fd < 0 || fstat(fd, &st) != 0 || fstatfs(fd, &fs) != 0) return send_reply(ch, {errno, 0});
    // /proc's files are no user's data: /proc/self/environ would be crispd's.
    if (!S_ISREG(st.st_mode) || fs.f_type == PROC_SUPER_MAGIC) return send_reply(ch, {kNotRegular, 0});
    size_t got = 0;
    while (got < data.size()) {
      ssize_t n = read(fd, data.data() + got, data.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return send_reply(ch, {errno, 0});
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    if (got > max_bytes) return send_reply(ch, {kTooLarge, 0});
    send_reply(ch, {0, static_cast<uint32_t>(got)}, -1, data.data());
  };
  Fd unused;
  auto reply = run_as_user(creds, work, &data, max_bytes, unused, timeout);
  if (!reply) return fail(reply.error_kind(), path + ": the reading process " + reply.error());
  // Absent or not the user's to read: there is nothing to use, which is no error.
  if (reply->err == ENOENT || reply->err == ENOTDIR || reply->err == EACCES) return std::optional<std::string>();
  if (reply->err != 0) return fail(reason(path, reply->err, max_bytes));
  return std::optional<std::string>(std::move(data));
}

namespace {

// path opened by the user with flags; see resolve_as_user.
// resolve: openat2's RESOLVE_* flags for the user's lookup (0: open's own rules).
Result<UserPath> open_with_rights(const UserCreds& creds, const std::string& path, int flags,
                                  std::chrono::milliseconds timeout, uint64_t resolve = 0) {
  auto work = [&](const Channel& ch) {
    open_how how{};
    how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
    how.mode = (flags & O_CREAT) ? 0644 : 0;  // the mode only matters to O_CREAT
    how.resolve = resolve;
    int fd = static_cast<int>(syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how));
    if (fd < 0) return send_reply(ch, {errno, 0});
    send_reply(ch, {0, 0}, fd);
  };
  UserPath out;
  auto reply = run_as_user(creds, work, nullptr, 0, out.fd, timeout);
  if (!reply) return fail(reply.error_kind(), path + ": the resolving process " + reply.error());
  if (reply->err == ENOENT || reply->err == ENOTDIR) return fail(ErrorKind::kNotFound, reason(path, reply->err, 0));
  if (reply->err != 0) return fail(reason(path, reply->err, 0));
  if (!out.fd) return fail(path + ": the resolving process sent no descriptor");
  struct stat st {};
  if (fstat(out.fd.get(), &st) != 0) return fail(path + ": " + errno_text(errno));
  out.is_directory = S_ISDIR(st.st_mode);
  char where[4096];
  std::string link = "/proc/self/fd/" + std::to_string(out.fd.get());
  ssize_t n = readlink(link.c_str(), where, sizeof where - 1);
  if (n < 0) return fail(path + ": " + errno_text(errno));
  out.path.assign(where, static_cast<size_t>(n));
  return out;
}

}  // namespace

Result<UserPath> resolve_as_user(const UserCreds& creds, const std::string& path, std::chrono::milliseconds timeout) {
  // Reached with the user's rights; what it holds stays theirs to read or not
  // (the mount passes on no permission), so reaching it is the whole check.
  return open_with_rights(creds, path, O_PATH, timeout);
}

Result<UserPath> open_as_user(const UserCreds& creds, const std::string& path, std::chrono::milliseconds timeout) {
  // O_NONBLOCK: a FIFO opens at once, for the caller to refuse. No magic link
  // (/proc/PID/root/…, /dev/fd/N): what it leads to is not what its path says,
  // such as a file inside a container, which looks like root's.
  auto opened = open_with_rights(creds, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, timeout, RESOLVE_NO_MAGICLINKS);
  // Nor a process's state: /proc/self/mem, opened by the child, would be crispd's memory.
  struct statfs fs {};
  if (opened && fstatfs(opened->fd.get(), &fs) != 0) return fail(path + ": " + errno_text(errno));
  if (opened && fs.f_type == PROC_SUPER_MAGIC) return fail(path + " is not a regular file");
  return opened;
}

Result<UserPath> create_beside_as_user(const UserCreds& creds, const std::string& path,
                                       std::chrono::milliseconds timeout) {
  static std::atomic<uint64_t> serial{0};
  size_t slash = path.find_last_of('/');
  if (path.empty() || path.front() != '/' || slash == path.size() - 1) return fail(path + " is not a file's path");
  std::string temp = path.substr(0, slash + 1) + "." + path.substr(slash + 1) + ".crisp-" + std::to_string(getpid()) +
                     "-" + std::to_string(serial++);
  auto made = open_with_rights(creds, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY, timeout);
  if (!made) return fail(made.error_kind(), "cannot write " + path + ": " + made.error().substr(temp.size() + 2));
  made->path = temp;
  return made;
}

Status rename_as_user(const UserCreds& creds, const std::string& from, const std::string& to,
                      std::chrono::milliseconds timeout) {
  auto work = [&](const Channel& ch) { send_reply(ch, {rename(from.c_str(), to.c_str()) == 0 ? 0 : errno, 0}); };
  Fd unused;
  auto reply = run_as_user(creds, work, nullptr, 0, unused, timeout);
  if (!reply) return fail(to + ": the renaming process " + reply.error());
  if (reply->err != 0) return fail("cannot replace " + to + ": " + errno_text(reply->err));
  return Ok{};
}

void unlink_as_user(const UserCreds& creds, const std::string& path, std::chrono::milliseconds timeout) {
  auto work = [&](const Channel& ch) { send_reply(ch, {unlink(path.c_str()) == 0 ? 0 : errno, 0}); };
  Fd unused;
  (void)run_as_user(creds, work, nullptr, 0, unused, timeout);
}

Result<uint64_t> finish_beside_as_user(const UserCreds& creds, UserPath& temp, const std::string& path,
                                       Status written) {
  struct stat st {};
  if (written && fstat(temp.fd.get(), &st) != 0) written = fail("fstat: " + errno_text(errno));
  temp.fd.reset();
  if (written) written = rename_as_user(creds, temp.path, path);
  if (!written) {
    unlink_as_user(creds, temp.path);
    return written.take_error();
  }
  return static_cast<uint64_t>(st.st_size);
}

bool take_user_ids(uint32_t uid, uint32_t gid, const std::vector<uint32_t>& groups) {
  static_assert(sizeof(gid_t) == sizeof(uint32_t));
  return syscall(SYS_setgroups, groups.size(), groups.data()) == 0 && syscall(SYS_setresgid, gid, gid, gid) == 0 &&
         syscall(SYS_setresuid, uid, uid, uid) == 0;
}

Result<std::string> home_of(uint32_t uid) {
  auto pw = lookup_uid(uid);
  if (!pw || pw->home.empty() || pw->home[0] != '/')
    return fail("uid " + std::to_string(uid) + " has no home directory in the password database");
  return pw->home;
}

}  // namespace crisp
