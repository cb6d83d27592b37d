// remap_to_root where the node forbids user namespaces: a seccomp filter makes
// unshare(CLONE_NEWUSER) fail as a node's policy would (this machine's sysctl
// is read-only, so the integration tests cannot turn them off).
#include "spank/join.h"
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

#include <cerrno>
#include <climits>
#include <cstddef>
#include <string>

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

// The holder's pid may be reused once it exits; a task must never join the
// mount namespace of whatever process has it then (as root, before setuid).
TEST(JoinHolder, PidAndStartTimeNameTheHolderAlone) {
  char self[PATH_MAX] = {};
  ASSERT_GT(readlink("/proc/self/exe", self, sizeof self - 1), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  auto started = crisp::process_start_time(child);
  ASSERT_TRUE(started.ok()) << started.error();
  EXPECT_TRUE(crisp::open_holder_mount_ns(child, *started, self).ok());
  auto other = crisp::open_holder_mount_ns(child, *started + 1, self);
  ASSERT_FALSE(other.ok()) << "another start time: another process with that pid";
  EXPECT_EQ(other.error(), "the step's container exited before its tasks could join it");
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(crisp::open_holder_mount_ns(child, *started, self).ok()) << "it exited";
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
