// remap_to_root where the node forbids user namespaces: a seccomp filter makes
// unshare(CLONE_NEWUSER) fail as a node's policy would (this machine's sysctl
// is read-only, so the integration tests cannot turn them off).
#include "spank/join.h"
#include "spank/held_ns.h"
#include "spank/id_calls_filter.h"
#include "spank/remap_root.h"
#include "spank/task_mounts.h"

#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <grp.h>
#include <sys/fsuid.h>
#include <unistd.h>
#include <fcntl.h>

#include <cerrno>
#include <climits>
#include <cstddef>
#include <string>
#include <vector>

#include "common/files.h"

namespace {

void forbid_unshare() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) _exit(10);
}

TEST(RemapRoot, ForbiddenUserNamespacesGiveOneClearLine) {
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    forbid_unshare();
    auto s = crisp::remap_to_root(1000, 1000);
    std::string msg = s ? "ok" : s.error();
    if (write(pipefd[1], msg.data(), msg.size()) < 0) _exit(11);
    _exit(0);
  }
  close(pipefd[1]);
  char buf[512] = {};
  ssize_t n = read(pipefd[0], buf, sizeof buf - 1);
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf),
            "--container-remap-root needs unprivileged user namespaces, which this node does not allow (Operation not "
            "permitted); run without it or ask your administrator");
}

// The task holds slurmstepd's memory until it execs: dumpable, a process of
// the user's could ptrace it and read that memory. Only the map writing needs it.
TEST(RemapRoot, TheTaskIsNotDumpableAfterward) {
  for (bool allowed : {true, false}) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) _exit(10);  // as slurmstepd's setuid leaves it
      if (!allowed) forbid_unshare();
      auto s = crisp::remap_to_root(getuid(), getgid());
      if (allowed && !s) _exit(11);
      _exit(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0 ? 0 : 12);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << (allowed ? "after a remap" : "after a failed one") << " (12: still dumpable)";
  }
}

// As enroot's filter: chown to another owner and the setuid family answer 0 and change nothing.
TEST(IdCallsFilter, ChownAndSetuidSucceedWithoutEffect) {
  char path[] = "/tmp/crisp-idcalls-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (!crisp::fake_id_calls()) _exit(10);
    if (chown(path, 4242, 4242) != 0 || setuid(4242) != 0 || setgroups(0, nullptr) != 0) _exit(11);
    struct stat st {};
    if (stat(path, &st) != 0 || st.st_uid == 4242 || getuid() == 4242) _exit(12);
    if (setfsuid(static_cast<uid_t>(-1)) != static_cast<int>(getuid())) _exit(13);  // -1 still asks
    _exit(crisp::read_text("/proc/self/status")->find("Seccomp:\t2") == std::string::npos ? 14 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  unlink(path);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10 install, 11 a call failed, 12 one took effect, 13 setfsuid(-1), 14 no filter";
}

// A stand-in for a step's holder: a child of the test, whose executable is the test's own.
struct Holder {
  char exe[PATH_MAX] = {};
  pid_t pid = -1;
  uint64_t start_time = 0;
  ~Holder() { stop(); }
  void stop() {
    if (pid <= 0) return;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    pid = -1;
  }
};

void start_holder(Holder& h) {
  ASSERT_GT(readlink("/proc/self/exe", h.exe, sizeof h.exe - 1), 0);
  h.pid = fork();
  ASSERT_GE(h.pid, 0);
  if (h.pid == 0) {
    pause();
    _exit(0);
  }
  auto started = crisp::process_start_time(h.pid);
  ASSERT_TRUE(started.ok()) << started.error();
  h.start_time = *started;
}

// The holder's pid may be reused once it exits; a task must never join the
// mount namespace of whatever process has it then (as root, before setuid).
TEST(JoinHolder, PidAndStartTimeNameTheHolderAlone) {
  Holder h;
  ASSERT_NO_FATAL_FAILURE(start_holder(h));
  EXPECT_TRUE(crisp::open_holder_mount_ns(h.pid, h.start_time, h.exe).ok());
  auto other = crisp::open_holder_mount_ns(h.pid, h.start_time + 1, h.exe);
  ASSERT_FALSE(other.ok()) << "another start time: another process with that pid";
  EXPECT_EQ(other.error(), "the step's container exited before its tasks could join it");
  pid_t exited = h.pid;
  h.stop();
  EXPECT_FALSE(crisp::open_holder_mount_ns(exited, h.start_time, h.exe).ok()) << "it exited";
}

bool is_dev_null(int fd) {
  struct stat null {}, st {};
  return stat("/dev/null", &null) == 0 && fstat(fd, &st) == 0 && st.st_rdev == null.st_rdev;
}

// A number closed behind its back and reused: not used, and never closed again.
TEST(HeldNs, ANumberReusedIsAnotherFile) {
  auto held = crisp::HeldNs::hold(crisp::Fd(open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC)));
  ASSERT_TRUE(held.ok()) << held.error();
  int number = held->here();
  ASSERT_GE(number, 0) << "the opener has it";
  ASSERT_EQ(close(number), 0);
  crisp::Fd null(open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_EQ(null.get(), number) << "the lowest free number";
  EXPECT_EQ(held->here(), -1) << "/dev/null at that number now";
  held->reset();
  EXPECT_TRUE(is_dev_null(number)) << "reset closed a file it did not open";
}

// user_init as slurmstepd runs it under SlurmdParameters=contain_spank.
struct UserInit {
  const crisp::v1::CreateStepResponse* response;
  const char* holder_exe;
  crisp::StepNamespaces ns;
  int number = -1;  // the mount namespace's descriptor, in the clone
};

int open_in_clone(void* arg) {
  auto* u = static_cast<UserInit*>(arg);
  auto ns = crisp::StepNamespaces::open(*u->response, u->holder_exe);
  if (!ns) return 1;
  u->ns = std::move(*ns);
  u->number = u->ns.mnt.here();
  return 0;
}

void user_init_in_clone(UserInit& u) {
  std::vector<char> stack(1 << 20);
  pid_t pid = clone(open_in_clone, stack.data() + stack.size(), CLONE_VM | SIGCHLD, &u);
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the clone could not open the namespaces";
  ASSERT_GE(u.number, 0);
  EXPECT_EQ(u.ns.mnt.opener(), pid);
}

// Opened in a clone(CLONE_VM) child (shared memory, its own descriptor table)
// that exits: slurmstepd's table has other files at those numbers. None is used
// or closed; a task opens the namespaces again and joins them.
TEST(StepNamespaces, OpenedInACloneAreNeitherUsedNorClosedButOpenedAgain) {
  Holder h;
  ASSERT_NO_FATAL_FAILURE(start_holder(h));
  crisp::v1::CreateStepResponse response;
  response.set_holder_pid(h.pid);
  response.set_holder_start_time(h.start_time);
  UserInit u{&response, h.exe, {}};
  ASSERT_NO_FATAL_FAILURE(user_init_in_clone(u));
  std::string holder_mnt = "/proc/" + std::to_string(h.pid) + "/ns/mnt";
  {
    // The very namespace at that number, but slurmstepd's own descriptor: still not the clone's.
    crisp::Fd opened(open(holder_mnt.c_str(), O_RDONLY | O_CLOEXEC));
    crisp::Fd same(dup3(opened.get(), u.number, O_CLOEXEC));
    ASSERT_EQ(same.get(), u.number);
    EXPECT_EQ(u.ns.mnt.here(), -1) << "a descriptor of the same namespace, opened by another process";
  }
  // slurmstepd's own files, one of them at the clone's number.
  std::vector<crisp::Fd> nulls;
  while (nulls.size() < 16 && (nulls.empty() || nulls.back().get() < u.number))
    nulls.emplace_back(open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_EQ(nulls.back().get(), u.number) << "no file of ours took the clone's number";
  EXPECT_EQ(u.ns.mnt.here(), -1) << "/dev/null at the clone's number";
  EXPECT_FALSE(u.ns.held_here());
  auto again = crisp::StepNamespaces::open(response, h.exe);
  ASSERT_TRUE(again.ok()) << again.error();
  u.ns = std::move(*again);  // as a task does: the clone's numbers forgotten
  EXPECT_TRUE(is_dev_null(u.number)) << "the clone's number was closed here";
  ASSERT_TRUE(u.ns.held_here());
  struct stat holder_ns {}, opened {};
  ASSERT_EQ(stat(holder_mnt.c_str(), &holder_ns), 0);
  ASSERT_EQ(fstat(u.ns.mnt.here(), &opened), 0);
  EXPECT_TRUE(opened.st_dev == holder_ns.st_dev && opened.st_ino == holder_ns.st_ino) << "not the holder's";
  // A task: forked, it has this process's copy, and joins through it.
  pid_t task = fork();
  ASSERT_GE(task, 0);
  if (task == 0) {
    if (u.ns.mnt.here() < 0) _exit(10);
    _exit(geteuid() != 0 || crisp::join_mount_ns(u.ns.mnt.here()).ok() ? 0 : 11);
  }
  int status = 0;
  ASSERT_EQ(waitpid(task, &status, 0), task);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "exit " << WEXITSTATUS(status) << " (10 not inherited, 11 setns)";
  u.ns = {};
  for (const crisp::Fd& null : nulls) EXPECT_TRUE(is_dev_null(null.get())) << "fd " << null.get() << " closed";
}

// The PMIx directory: taken on the host through no symlink, and attached in the
// image through none (root makes the directories on the way).
TEST(JoinPmix, NoSymlinkIsFollowedOnEitherSide) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (mounts, chroot)";
  char tmpl[] = "/tmp/crisp-pmix-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string root = tmpl;
  ASSERT_EQ(mkdir((root + "/spool").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root + "/spool/pmix.1.0").c_str(), 0700), 0);
  ASSERT_EQ(symlink((root + "/spool").c_str(), (root + "/link").c_str()), 0);
  EXPECT_FALSE(crisp::clone_host_tree(root + "/link/pmix.1.0").ok()) << "a symlink on the host side";
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A container of our own: a private mount namespace whose root is an "image" with a symlink.
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(10);
    auto tree = crisp::clone_host_tree(root + "/spool/pmix.1.0");
    if (!tree) _exit(11);
    std::string image = root + "/image";
    if (mkdir(image.c_str(), 0755) != 0 || mkdir((image + "/var").c_str(), 0755) != 0 ||
        symlink("/etc", (image + "/var/spool").c_str()) != 0 || mkdir((image + "/proc").c_str(), 0755) != 0 ||
        mount("proc", (image + "/proc").c_str(), "proc", 0, nullptr) != 0 || chroot(image.c_str()) != 0 || chdir("/") != 0)
      _exit(12);
    auto through_link = crisp::attach_tree(tree->get(), "/var/spool/pmix.1.0");
    if (through_link || through_link.error().find("the image has a symlink on the way") == std::string::npos) _exit(13);
    _exit(crisp::attach_tree(tree->get(), "/var/other/pmix.1.0").ok() ? 0 : 14);
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "exit " << WEXITSTATUS(status);
  EXPECT_NE(access((root + "/image/etc/pmix.1.0").c_str(), F_OK), 0) << "nothing made through the symlink";
  (void)!system(("rm -rf " + root).c_str());
}

}  // namespace
