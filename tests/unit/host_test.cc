// What crispd does on the host for a user: file access with the user's
// credentials, tmpfs mounts, the HCA view, the entrypoint's log, and the owner
// that undoes them. Root-only cases (setuid, mount) skip where not root.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "agent/host/entrypoint.h"
#include "agent/host/hca_view.h"
#include "agent/host/light_child.h"
#include "agent/host/host_artifacts.h"
#include "agent/host/host_mounts.h"
#include "agent/host/mount_info.h"
#include "common/files.h"
#include "common/mount_api.h"
#include "agent/host/user_access.h"
#include "agent/host/user_files.h"
#include "agent/host/user_rootfs.h"
#include "agent/host/work_cgroup.h"
#include "agent/host/squashfs_mount.h"
#include "agent/host/squashfs_tools.h"
#include "tests/unit/test_dir.h"

namespace {

constexpr uint32_t kNobody = 65534;

// A temporary directory, for what any user may do.
class HostDirTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE((root_ = crisp_test::make_test_dir("host")).empty()); }
  void TearDown() override {
    if (!root_.empty()) (void)!system(("umount -R -l " + root_ + "/* 2>/dev/null; rm -rf " + root_).c_str());
  }
  void write(const std::string& path, const std::string& text, mode_t mode) {
    std::ofstream(path) << text;
    ASSERT_EQ(chmod(path.c_str(), mode), 0);
  }
  std::string root_;
  crisp::UserCreds nobody_{kNobody, kNobody, {}};
};

// The same, for what needs root (credentials, mounts). Skipped in SetUp: a
// GTEST_SKIP() in a helper the test calls returns from the helper alone.
class HostTest : public HostDirTest {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (credentials, mounts)";
    HostDirTest::SetUp();
  }
};

TEST_F(HostTest, ReadAsUserSeesOnlyWhatTheUserMayRead) {
  write(root_ + "/public", "for all", 0644);
  write(root_ + "/secret", "root only", 0600);
  auto pub = crisp::read_file_as_user(nobody_, root_ + "/public", 100);
  ASSERT_TRUE(pub.ok()) << pub.error();
  EXPECT_EQ(pub->value_or("(none)"), "for all");
  auto secret = crisp::read_file_as_user(nobody_, root_ + "/secret", 100);
  ASSERT_TRUE(secret.ok()) << secret.error();
  EXPECT_FALSE(*secret) << "not the user's to read: nothing";
  ASSERT_EQ(symlink((root_ + "/secret").c_str(), (root_ + "/link").c_str()), 0);
  EXPECT_FALSE(*crisp::read_file_as_user(nobody_, root_ + "/link", 100)) << "nor through a symlink";
  EXPECT_TRUE(*crisp::read_file_as_user({0, 0, {}}, root_ + "/secret", 100)) << "root itself may";
  EXPECT_FALSE(*crisp::read_file_as_user(nobody_, root_ + "/missing", 100));
}

TEST_F(HostTest, ReadAsUserTakesRegularFilesOnlyAndIsBounded) {
  write(root_ + "/big", std::string(101, 'x'), 0644);
  auto big = crisp::read_file_as_user(nobody_, root_ + "/big", 100);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error(), root_ + "/big is larger than 100 bytes");
  ASSERT_EQ(mkfifo((root_ + "/fifo").c_str(), 0666), 0);
  auto t0 = std::chrono::steady_clock::now();
  auto fifo = crisp::read_file_as_user(nobody_, root_ + "/fifo", 100);
  ASSERT_FALSE(fifo.ok()) << "a FIFO would hold the reader forever";
  EXPECT_EQ(fifo.error(), root_ + "/fifo is not a regular file");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  auto dir = crisp::read_file_as_user(nobody_, root_, 100);
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error(), root_ + " is not a regular file");
  // The reading process's own state (the caller's environment, its memory) is no user's file;
  // root's ids, which may open them, show that the kind of file refuses them.
  ASSERT_EQ(symlink("/proc/self/environ", (root_ + "/environ").c_str()), 0);
  EXPECT_FALSE(*crisp::read_file_as_user(nobody_, root_ + "/environ", 1 << 20)) << "not the user's to read";
  auto proc = crisp::read_file_as_user({0, 0, {}}, root_ + "/environ", 1 << 20);
  ASSERT_FALSE(proc.ok());
  EXPECT_EQ(proc.error(), root_ + "/environ is not a regular file");
  ASSERT_EQ(symlink("/proc/self/mem", (root_ + "/mem").c_str()), 0);
  auto mem = crisp::open_as_user({0, 0, {}}, root_ + "/mem");
  ASSERT_FALSE(mem.ok());
  EXPECT_EQ(mem.error(), root_ + "/mem is not a regular file");
}

// The user's uid is taken by a child process only: a thread of crispd that
// carried it could be signalled by that user, which stops the whole daemon.
TEST_F(HostTest, NoThreadOfTheCallerEverCarriesTheUsersIds) {
  write(root_ + "/public", "x", 0644);
  std::atomic<bool> done{false};
  std::atomic<int> seen_non_root{0}, looks{0};
  std::thread watcher([&] {
    while (!done) {
      for (const std::string& task : crisp::list_dir("/proc/self/task")) {
        std::ifstream status("/proc/self/task/" + task + "/status");
        for (std::string line; std::getline(status, line);)
          if (line.rfind("Uid:", 0) == 0 && line.find("65534") != std::string::npos) seen_non_root++;
      }
      looks++;
    }
  });
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(crisp::read_file_as_user(nobody_, root_ + "/public", 10).ok());
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(crisp::resolve_as_user(nobody_, root_).ok());
  done = true;
  watcher.join();
  EXPECT_GT(looks, 10);
  EXPECT_EQ(seen_non_root, 0);
}

// A light child (a clone sharing the caller's memory) holds the user's effective and
// file-system ids only: its real and saved ids stay root's, so no process of the user may
// signal or trace it, and it has no capability.
TEST_F(HostTest, ALightChildHasTheUsersFileRightsAndNothingElse) {
  write(root_ + "/secret", "s", 0600);
  char status[4096] = {};
  int read_err = 0;
  auto value = crisp::run_light_child(
      [&] {
        if (!crisp::take_user_file_rights(kNobody, kNobody, {kNobody})) return 1;
        int fd = open((root_ + "/secret").c_str(), O_RDONLY | O_CLOEXEC);
        read_err = fd < 0 ? errno : 0;
        int st = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
        if (st < 0 || read(st, status, sizeof status - 1) <= 0) return 2;
        return 0;
      },
      std::chrono::seconds(5));
  ASSERT_TRUE(value.ok()) << value.error();
  ASSERT_EQ(*value, 0);
  EXPECT_EQ(read_err, EACCES) << "root's 0600 file, checked as nobody";
  std::string text(status);
  EXPECT_NE(text.find("Uid:\t0\t65534\t0\t65534\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Gid:\t0\t65534\t0\t65534\n"), std::string::npos) << text;
  EXPECT_NE(text.find("CapEff:\t0000000000000000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("CapPrm:\t0000000000000000\n"), std::string::npos) << text;
  EXPECT_EQ(geteuid(), 0u) << "the caller keeps its own ids";
}

// A user namespace root made (as slurmstepd or runc do for a job) is owned by uid 0: a child
// whose effective uid were root's would hold every capability in it, and so reach through
// /proc/PID/cwd of the job's process past a directory the user it reads for cannot search.
TEST_F(HostTest, ALightChildReachesNoProcessOfAnotherUserThroughProc) {
  constexpr uid_t kOwner = 3000;
  std::string top = root_ + "/theirs", dir = top + "/open";
  ASSERT_EQ(mkdir(top.c_str(), 0700), 0);
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  write(dir + "/f", "private", 0644);
  for (const std::string& p : {top, dir, dir + "/f"}) ASSERT_EQ(chown(p.c_str(), kOwner, kOwner), 0);
  int go[2], ready[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe2(ready, O_CLOEXEC), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // in a user namespace of root's, mapped 0 -> kOwner, its cwd under the 0700 directory
    char c;
    if (unshare(CLONE_NEWUSER) != 0 || ::write(ready[1], "u", 1) != 1 || read(go[0], &c, 1) != 1) _exit(1);
    if (setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0 || chdir(dir.c_str()) != 0) _exit(2);
    // A job's program: exec makes its memory the namespace's (and dumpable), as a job's is.
    if (::write(ready[1], "r", 1) != 1) _exit(3);
    execl("/bin/sleep", "sleep", "60", nullptr);
    _exit(4);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  for (const char* map : {"uid_map", "gid_map"}) {
    std::ofstream("/proc/" + std::to_string(pid) + "/" + map) << "0 " << kOwner << " 1\n";
  }
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  ASSERT_EQ(read(ready[0], &c, 1), 1) << "the job's process did not start";
  close(ready[1]);
  ASSERT_EQ(read(ready[0], &c, 1), 0) << "exec closes its end";
  std::string through = "/proc/" + std::to_string(pid) + "/cwd/f";
  auto root_reads = crisp::read_file_as_user({0, 0, {}}, through, 100);
  auto nobody_reads = crisp::read_file_as_user(nobody_, through, 100);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  for (int fd : {go[0], go[1], ready[0]}) close(fd);
  ASSERT_TRUE(root_reads.ok()) << root_reads.error();
  EXPECT_EQ(root_reads->value_or(""), "private") << "the path is there for root";
  ASSERT_TRUE(nobody_reads.ok()) << nobody_reads.error();
  EXPECT_FALSE(*nobody_reads) << "read through another user's process";
}

// A request that blocks (a FIFO with no writer, a hung FUSE mount) ends at the deadline, and
// what the child closed stays open in the caller.
TEST_F(HostTest, ALightChildIsKilledAtItsDeadline) {
  ASSERT_EQ(mkfifo((root_ + "/fifo").c_str(), 0666), 0);
  int mine = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(mine, 0);
  auto t0 = std::chrono::steady_clock::now();
  auto value = crisp::run_light_child(
      [&] {
        close_range(0, ~0u, 0);
        return open((root_ + "/fifo").c_str(), O_RDONLY | O_CLOEXEC);
      },
      std::chrono::milliseconds(300));
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.error_kind(), crisp::ErrorKind::kTimedOut);
  EXPECT_GE(took, std::chrono::milliseconds(300));
  EXPECT_LT(took, std::chrono::seconds(3));
  EXPECT_EQ(fcntl(mine, F_GETFD), FD_CLOEXEC) << "the caller's descriptors are its own";
  close(mine);
  auto quick = crisp::run_light_child([] { return 7; }, std::chrono::seconds(5));
  ASSERT_TRUE(quick.ok());
  EXPECT_EQ(*quick, 7);
}

TEST_F(HostTest, ResolveAsUserChecksEveryStepWithTheUsersRights) {
  ASSERT_EQ(mkdir((root_ + "/open").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root_ + "/closed").c_str(), 0700), 0);
  ASSERT_EQ(mkdir((root_ + "/closed/inner").c_str(), 0777), 0);
  ASSERT_EQ(symlink((root_ + "/closed/inner").c_str(), (root_ + "/open/way-in").c_str()), 0);
  auto open = crisp::resolve_as_user(nobody_, root_ + "/open/../open");
  ASSERT_TRUE(open.ok()) << open.error();
  EXPECT_EQ(open->path, root_ + "/open") << "resolved, .. and all";
  EXPECT_TRUE(open->is_directory);
  auto in = crisp::resolve_as_user(nobody_, root_ + "/open/way-in");
  ASSERT_FALSE(in.ok()) << "a symlink into a directory the user cannot search";
  EXPECT_EQ(in.error(), root_ + "/open/way-in: Permission denied");
  auto missing = crisp::resolve_as_user(nobody_, root_ + "/missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error_kind(), crisp::ErrorKind::kNotFound);
  EXPECT_TRUE(crisp::resolve_as_user({0, 0, {}}, root_ + "/open/way-in").ok());
  write(root_ + "/open/unreadable", "secret", 0600);
  EXPECT_TRUE(crisp::resolve_as_user(nobody_, root_ + "/open/unreadable").ok())
      << "reached but not readable: it may be mounted, and stays unreadable";
}

// The attack of a swapped symlink: the user's link names their own directory
// when it is checked, and another's when containerd would resolve it.
TEST_F(HostTest, AStagedSourceKeepsWhatTheUserResolved) {
  ASSERT_EQ(mkdir((root_ + "/mine").c_str(), 0755), 0);
  write(root_ + "/mine/file", "mine", 0644);
  ASSERT_EQ(mkdir((root_ + "/theirs").c_str(), 0700), 0);
  write(root_ + "/theirs/file", "secret", 0600);
  ASSERT_EQ(symlink("mine", (root_ + "/link").c_str()), 0);
  auto src = crisp::resolve_as_user(nobody_, root_ + "/link");
  ASSERT_TRUE(src.ok()) << src.error();
  ASSERT_EQ(unlink((root_ + "/link").c_str()), 0);
  ASSERT_EQ(symlink("theirs", (root_ + "/link").c_str()), 0);  // swapped after the check
  std::string mounts = root_ + "/mounts";
  ASSERT_TRUE(crisp::make_mount_root(root_, mounts).ok());
  auto staged = crisp::stage_user_path(mounts, 0, *src);
  ASSERT_TRUE(staged.ok()) << staged.error();
  std::ifstream in(*staged + "/file");
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "mine");
  write(root_ + "/mine/one", "1", 0644);
  auto file = crisp::resolve_as_user(nobody_, root_ + "/mine/one");
  ASSERT_TRUE(file.ok());
  EXPECT_FALSE(file->is_directory);
  auto staged_file = crisp::stage_user_path(mounts, 1, *file);
  ASSERT_TRUE(staged_file.ok()) << staged_file.error();
  crisp::remove_mount_root(mounts);
  EXPECT_NE(access(mounts.c_str(), F_OK), 0) << "directory and file mount points both go";
}

TEST(UserRootfs, TheContainersLayersComeFromContainerdsSnapshot) {
  const std::string snaps = "/var/lib/crisp/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots";
  crisp::SnapshotMount m{"overlay", "overlay",
                         {"index=off", "workdir=" + snaps + "/9/work", "upperdir=" + snaps + "/9/fs",
                          "lowerdir=" + snaps + "/5/fs:" + snaps + "/4/fs", "xino=off", "bogus=1"}};
  auto r = crisp::overlay_of_snapshot({m});
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->snapshots, snaps);
  EXPECT_EQ(r->lower, (std::vector<std::string>{"5/fs", "4/fs"}));
  EXPECT_EQ(r->upper, "9/fs");
  EXPECT_EQ(r->options, "index=off,xino=off") << "containerd's choices kept, nothing unknown";
  auto with = [&](std::vector<std::string> options) {
    return crisp::overlay_of_snapshot({{"overlay", "overlay", std::move(options)}});
  };
  EXPECT_FALSE(with({"lowerdir=/a/1/fs:/a/2/fs"}).ok()) << "no upper layer";
  EXPECT_FALSE(with({"lowerdir=/etc/x", "upperdir=/a/s/9/fs", "workdir=/a/s/9/work"}).ok()) << "a layer outside the snapshots";
  EXPECT_FALSE(with({"lowerdir=/a/s/1/fs", "upperdir=/a/s/9/fs", "workdir=/etc"}).ok()) << "a work dir outside them";
  EXPECT_FALSE(with({"lowerdir=/a/s/../../etc", "upperdir=/a/s/9/fs", "workdir=/a/s/9/work"}).ok()) << "..";
  EXPECT_FALSE(crisp::overlay_of_snapshot({m, m}).ok()) << "one mount only";
  EXPECT_FALSE(crisp::overlay_of_snapshot({{"bind", snaps + "/4/fs", {"ro", "rbind"}}}).ok())
      << "a container's root is never a bind";
  EXPECT_FALSE(crisp::overlay_of_snapshot({}).ok());
  // A view: lower layers alone, or the one layer of a one-layer image.
  auto view = crisp::overlay_of_snapshot({{"overlay", "overlay", {"lowerdir=" + snaps + "/5/fs:" + snaps + "/4/fs"}}}, true);
  ASSERT_TRUE(view.ok()) << view.error();
  EXPECT_EQ(view->lower, (std::vector<std::string>{"5/fs", "4/fs"}));
  auto one = crisp::overlay_of_snapshot({{"bind", snaps + "/4/fs", {"ro", "rbind"}}}, true);
  ASSERT_TRUE(one.ok()) << one.error();
  EXPECT_EQ(one->snapshots, snaps);
  EXPECT_EQ(one->lower, (std::vector<std::string>{"4/fs"}));
}

TEST(UserRootfs, TheMountsOnTheContainersRoot) {
  std::string info =
      "1200 1100 0:90 / / rw,relatime master:1 - overlay overlay rw,lowerdir=/x/5/fs,upperdir=/x/9/fs,workdir=/x/9/work\n"
      "1201 1200 0:91 / /proc rw,nosuid - proc proc rw\n"
      "1202 1200 0:92 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k\n"
      "1203 1202 0:93 / /dev/pts rw - devpts devpts rw\n"
      "1204 1200 8:1 /home/u /my\\040dir rw - ext4 /dev/sda1 rw\n"
      "1205 1200 8:1 /home/u /my\\040dir rw - ext4 /dev/sda1 rw\n";
  auto r = crisp::root_children(info);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(*r, (std::vector<std::string>{"/proc", "/dev", "/my dir"})) << "the root's own, once each";
  EXPECT_FALSE(crisp::root_children("1 0 8:1 / / rw - ext4 /dev/sda1 rw\n").ok()) << "not an overlay";
  EXPECT_FALSE(crisp::root_children("").ok());
}

// A claimed spare's mount points are made by a child its caller waits for whole: only where
// no lookup can wait on a server or a user's FUSE daemon.
TEST(MountInfo, MountPointsMadeOnLocalMountsOnly) {
  auto mounts = crisp::parse_mountinfo(
      "1 0 0:1 / / rw - overlay overlay rw\n"
      "2 1 0:2 / /dev rw,nosuid - tmpfs tmpfs rw\n"
      "3 1 0:3 / /proc rw - proc proc rw\n"
      "4 1 0:4 /scratch /scratch rw - lustre 10.0.0.1@tcp:/fs rw\n"
      "5 1 0:5 /u /home/u rw - fuse.sshfs u@h: rw\n"
      "6 2 0:6 / /dev/shm rw - tmpfs shm rw\n");
  EXPECT_TRUE(crisp::made_on_local_mounts(mounts, {"/home2", "/dev/nvidia0", "/dev/shm/x", "/opt/data"}));
  EXPECT_FALSE(crisp::made_on_local_mounts(mounts, {"/scratch/u"})) << "a lookup on Lustre";
  EXPECT_FALSE(crisp::made_on_local_mounts(mounts, {"/scratch"})) << "the mount point itself is Lustre's root";
  EXPECT_FALSE(crisp::made_on_local_mounts(mounts, {"/home/u/x"})) << "a user's FUSE mount";
  EXPECT_FALSE(crisp::made_on_local_mounts(mounts, {"/data", "/data/sub"})) << "under the step's own mount";
  EXPECT_FALSE(crisp::made_on_local_mounts(mounts, {"/data", "/data"})) << "stacked on it";
  EXPECT_TRUE(crisp::made_on_local_mounts(mounts, {"/data", "/database"}));
}

// As runc 1.3 leaves them (recorded on Debian sid): the host's ro bind of /var/tmp/rosrc and
// crispd's nosuid,nodev tmpfs, bound in with those cleared.
TEST(MountInfo, WhatTheRuntimesRemountClearedOfTheSources) {
  const std::string host =
      "22 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
      "30 22 0:25 / /run rw,nosuid,nodev - tmpfs run rw\n"
      "41 30 0:46 / /run/crisp/tmpfs/259.0/0 rw,nosuid,nodev,relatime - tmpfs tmpfs rw,size=64k\n"
      "42 30 254:0 /var/tmp/rosrc /run/crisp/tmpfs/259.0/m0 ro,nosuid,relatime - ext4 /dev/vda rw\n"
      "43 42 0:47 / /run/crisp/tmpfs/259.0/m0/sub rw,noexec,relatime - tmpfs tmpfs rw\n"
      "50 22 254:0 /var/tmp/with\\040space /var/tmp/with\\040space rw,nodev - ext4 /dev/vda rw\n";
  const std::vector<std::string> sources = {"/run/crisp/tmpfs/259.0/0", "/run/crisp/tmpfs/259.0/m0",
                                            "/usr/local/libexec/crisp/crisp-holder", "/run/crisp/logs/x",
                                            "/var/tmp/with space/dir", "relative/not/absolute"};
  auto attrs = crisp::source_attrs(crisp::parse_mountinfo(host), sources);
  using S = crisp::SourceAttrs;
  EXPECT_EQ(attrs, (std::vector<S>{{"0:46", "/", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV},
                                   {"254:0", "/var/tmp/rosrc", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID},
                                   {"0:47", "/", MOUNT_ATTR_NOEXEC},
                                   {"254:0", "/usr/local/libexec/crisp/crisp-holder", 0},
                                   {"0:25", "/crisp/logs/x", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV},
                                   {"254:0", "/var/tmp/with space/dir", MOUNT_ATTR_NODEV}}))
      << "the mount each is on, the one stacked last; what is mounted below comes along; a path on none is left out";
  const std::string container =
      "300 200 0:60 / / rw,relatime - overlay overlay rw\n"
      "301 300 0:46 / /scratch rw,relatime - tmpfs tmpfs rw,size=64k\n"
      "302 300 254:0 /var/tmp/rosrc /ro rw,relatime - ext4 /dev/vda rw\n"
      "303 302 0:47 / /ro/sub rw,noexec,relatime - tmpfs tmpfs rw\n"
      "304 300 254:0 /usr/local/libexec/crisp/crisp-holder /.crisp/holder ro,relatime - ext4 /dev/vda rw\n"
      "305 300 254:0 /var/tmp/rosrc /data ro,nosuid,relatime - ext4 /dev/vda rw\n"
      "306 300 254:0 /var/tmp/other /other rw,relatime - ext4 /dev/vda rw\n";
  using L = crisp::LostAttrs;
  EXPECT_EQ(crisp::lost_attrs(crisp::parse_mountinfo(container), attrs),
            (std::vector<L>{{"/scratch", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV},
                            {"/ro", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID}}))
      << "only what lost a restriction: a mount that kept them, asked more, or is of no source is left";
  EXPECT_TRUE(crisp::parse_mountinfo("garbage\n1 2 3\n\n").empty());
  EXPECT_EQ(crisp::restricting_attrs("ro,nosuid,nodev,noexec,relatime,rw"),
            uint64_t{MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC});
}

TEST(UserRootfs, OnlyANamespaceRuncMadeIsUsed) {
  // This process's own mount namespace is owned by the node's user namespace: accepted.
  auto mine = crisp::runc_mount_ns(getpid());
  EXPECT_TRUE(mine.ok()) << mine.error();
  // A child that made a user and mount namespace of its own (any user may) is refused.
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    char c = unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0 ? 1 : 0;
    (void)!write(ready[1], &c, 1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  auto theirs = crisp::runc_mount_ns(pid);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
  ASSERT_EQ(c, 1) << "this kernel lets no one make a user namespace";
  ASSERT_FALSE(theirs.ok());
  EXPECT_EQ(theirs.error_kind(), crisp::ErrorKind::kRefused);
}

TEST(UserRootfs, TheSnapshotsDirectoryMustBeRootsAlone) {
  char tmpl[] = "/tmp/crisp-snaps-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  EXPECT_EQ(crisp::check_snapshots_dir(dir).ok(), geteuid() == 0) << "0700, the caller's";
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  EXPECT_FALSE(crisp::check_snapshots_dir(dir).ok()) << "others may write in it";
  ASSERT_EQ(chmod(dir.c_str(), 0700), 0);
  ASSERT_EQ(symlink(dir.c_str(), (dir + "-link").c_str()), 0);
  EXPECT_FALSE(crisp::check_snapshots_dir(dir + "-link").ok()) << "reached through a symlink";
  unlink((dir + "-link").c_str());
  rmdir(dir.c_str());
}

TEST(UserRootfs, TheIdmapSwapsRootAndTheUser) {
  EXPECT_EQ(crisp::swap_map(2001), "0 2001 1\n2001 0 1\n1 1 2000\n2002 2002 4294965293\n");
  EXPECT_EQ(crisp::swap_map(1), "0 1 1\n1 0 1\n2 2 4294967293\n");
  EXPECT_EQ(crisp::swap_map(0), "0 0 4294967295\n");
}

// A squashfs 4.0 superblock's first 96 bytes, little-endian, as mksquashfs writes them.
std::string superblock(uint64_t bytes_used, uint32_t block_log = 17, uint16_t major = 4) {
  std::string b(crisp::kSquashfsSuperblockSize, '\0');
  auto put = [&](size_t at, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) b[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  put(0, 0x73717368, 4);
  put(12, block_log < 32 ? 1ull << block_log : 0, 4);
  put(20, 1, 2);  // gzip
  put(22, block_log, 2);
  put(28, major, 2);
  put(40, bytes_used, 8);
  return b;
}

TEST(Squashfs, TheSuperblockTellsANonImageADamagedOneAndATruncatedOne) {
  auto ok = crisp::parse_squashfs_superblock(superblock(4096), 8192);
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->bytes_used, 4096u);
  EXPECT_EQ(ok->block_size, 131072u);
  auto not_one = crisp::parse_squashfs_superblock(std::string(96, 'x'), 8192);
  ASSERT_FALSE(not_one.ok());
  EXPECT_NE(not_one.error().find("not a squashfs image"), std::string::npos);
  EXPECT_FALSE(crisp::parse_squashfs_superblock("hsqs", 8192).ok()) << "shorter than a superblock";
  auto truncated = crisp::parse_squashfs_superblock(superblock(100000), 8192);
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.error(), "it is truncated: the squashfs needs 100000 bytes, the file has 8192");
  EXPECT_FALSE(crisp::parse_squashfs_superblock(superblock(4096, 17, 3), 8192).ok()) << "version 3";
  EXPECT_FALSE(crisp::parse_squashfs_superblock(superblock(4096, 40), 8192).ok()) << "block size";
}

TEST(Squashfs, TheKernelMountsOnlyWhatNoUserCanHaveWritten) {
  constexpr int64_t kExt4 = 0xEF53, kOverlay = 0x794c7630, kFuse = 0x65735546, kSquashfs = 0x73717368;
  struct stat st {};
  st.st_uid = 0;
  st.st_mode = S_IFREG | 0644;
  EXPECT_TRUE(crisp::kernel_may_mount(st, false, kExt4, false));
  EXPECT_FALSE(crisp::kernel_may_mount(st, true, kExt4, false)) << "an ACL may let a user write it";
  EXPECT_FALSE(crisp::kernel_may_mount(st, false, kOverlay, false)) << "a container layer's file: a user's image";
  EXPECT_FALSE(crisp::kernel_may_mount(st, false, kFuse, false)) << "a FUSE file's owner is what its server says";
  EXPECT_FALSE(crisp::kernel_may_mount(st, false, kSquashfs, false)) << "a file inside an image";
  st.st_mode = S_IFREG | 0664;
  EXPECT_FALSE(crisp::kernel_may_mount(st, false, kExt4, false)) << "group-writable";
  st.st_mode = S_IFREG | 0646;
  EXPECT_FALSE(crisp::kernel_may_mount(st, false, kExt4, false)) << "world-writable";
  st.st_mode = S_IFREG | 0444;
  st.st_uid = 2001;
  EXPECT_FALSE(crisp::kernel_may_mount(st, false, kExt4, false)) << "a user's own, even read-only (they may chmod)";
  EXPECT_TRUE(crisp::kernel_may_mount(st, false, kOverlay, true)) << "the admin trusts every owner";
}

TEST_F(HostTest, ASquashfsMountsReadsAndLeavesNoLoopDeviceBehind) {
  std::string dir = root_ + "/sq";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((dir + "/etc").c_str(), 0755), 0);
  std::ofstream(dir + "/etc/environment") << "A=1\n";
  ASSERT_EQ(symlink("/etc/environment", (dir + "/link").c_str()), 0);
  std::string image = root_ + "/x.sqsh";
  ASSERT_EQ(system(("mksquashfs " + dir + " " + image + " -all-root -noappend -quiet >/dev/null").c_str()), 0)
      << "needs squashfs-tools";
  crisp::Fd file(open(image.c_str(), O_RDONLY | O_CLOEXEC));
  auto root = crisp::mount_squashfs(file.get(), image);
  ASSERT_TRUE(root.ok()) << root.error();
  EXPECT_EQ(crisp::read_image_file(root->get(), "/etc/environment", 1024), "A=1\n");
  EXPECT_EQ(crisp::read_image_file(root->get(), "/link", 1024), "A=1\n") << "an image's absolute link stays in it";
  EXPECT_EQ(crisp::read_image_file(root->get(), "/../../etc/environment", 1024), "A=1\n");
  EXPECT_EQ(crisp::read_image_file(root->get(), "/etc", 1024), "") << "not a regular file";
  struct statfs fs {};
  ASSERT_EQ(fstatfs(root->get(), &fs), 0);
  EXPECT_EQ(fs.f_type, 0x73717368u);
  root->reset();
  file.reset();
  // The loop device goes with its last user (autoclear), asynchronously.
  bool freed = false;
  for (int i = 0; i < 100 && !freed; ++i, std::this_thread::sleep_for(std::chrono::milliseconds(20))) {
    freed = system(("losetup -j " + image + " | grep -q .").c_str()) != 0;
  }
  EXPECT_TRUE(freed) << "a loop device still reads " << image;
  std::ofstream(root_ + "/junk") << std::string(8192, 'j');
  crisp::Fd junk(open((root_ + "/junk").c_str(), O_RDONLY | O_CLOEXEC));
  auto refused = crisp::mount_squashfs(junk.get(), root_ + "/junk");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("cannot read it as squashfs"), std::string::npos) << refused.error();
}

TEST_F(HostTest, AUsersImageIsReadAndExtractedWithTheirIdsAlone) {
  std::string src = root_ + "/src", image = root_ + "/u.sqsh", into = root_ + "/into";
  ASSERT_EQ(mkdir(src.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((src + "/etc").c_str(), 0755), 0);
  std::ofstream(src + "/etc/environment") << "B=2\n";
  ASSERT_EQ(system(("mksquashfs " + src + " " + image + " -all-root -noappend -quiet >/dev/null").c_str()), 0);
  ASSERT_EQ(chown(image.c_str(), kNobody, kNobody), 0);
  ASSERT_EQ(mkdir(into.c_str(), 0755), 0);
  crisp::Fd file(open(image.c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(crisp::cat_as_user(nobody_, file.get(), "etc/environment", 1024, std::chrono::seconds(10)), "B=2\n");
  EXPECT_EQ(crisp::cat_as_user(nobody_, file.get(), "etc/none", 1024, std::chrono::seconds(10)), "");
  auto userns = crisp::swapping_userns(kNobody, kNobody);
  ASSERT_TRUE(userns.ok()) << userns.error();
  auto s = crisp::unsquash_as_user(nobody_, file.get(), into, userns->get(), std::chrono::seconds(30));
  ASSERT_TRUE(s.ok()) << s.error();
  struct stat st {};
  ASSERT_EQ(stat((into + "/etc/environment").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u) << "written by the user through the idmap: root's on disk, as the image's layers";
  crisp::Fd junk(open("/etc/hostname", O_RDONLY | O_CLOEXEC));
  auto bad = crisp::unsquash_as_user(nobody_, junk.get(), into, userns->get(), std::chrono::seconds(30));
  EXPECT_FALSE(bad.ok());
}

TEST(UserFiles, PasswdAndGroupAsEnrootsShadowHookMakesThem) {
  crisp::UserIdentity u{2001, 2001, "alice", "alice", "Alice A", "/home/alice", "/bin/bash"};
  std::string image =
      "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
      "_apt:x:100:65534::/nonexistent:/usr/sbin/nologin\nubuntu:x:2001:2001::/home/ubuntu:/bin/bash\n"
      "broken line\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
  EXPECT_EQ(crisp::merged_passwd(image, u, true),
            "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
            "alice:x:2001:2001:Alice A:/home/alice:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n");
  EXPECT_NE(crisp::merged_passwd("", u, false).find("alice:x:2001:2001:Alice A:/home/alice:/bin/sh\n"),
            std::string::npos)
      << "a shell the image lacks becomes /bin/sh; an image without /etc/passwd gets root and nobody";
  crisp::UserIdentity evil{2001, 2001, "a:b\nroot", "g", "x:0:0", "/h", "/bin/sh"};
  std::string forged = crisp::merged_passwd("", evil, true);
  EXPECT_EQ(std::count(forged.begin(), forged.end(), '\n'), 3) << "no field can add a line or a field";
  EXPECT_EQ(crisp::merged_group("root:x:0:\nusers:x:100:\nubuntu:x:2001:\n", u),
            "root:x:0:\nnogroup:x:65534:\nalice:x:2001:\nusers:x:100:\n");
}

TEST_F(HostDirTest, HomeComesFromThePasswordDatabase) {
  auto home = crisp::home_of(0);
  ASSERT_TRUE(home.ok()) << home.error();
  EXPECT_EQ(*home, "/root");
  auto none = crisp::home_of(4000000000u);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error(), "uid 4000000000 has no home directory in the password database");
}

TEST_F(HostTest, TmpfsMountsBelongToTheUserAreBoundedAndGoAway) {
  std::string mounts = root_ + "/tmpfs/7.0";
  ASSERT_TRUE(crisp::make_mount_root(root_ + "/tmpfs", mounts).ok());
  for (size_t i = 0; i < 2; ++i) {
    auto d = crisp::make_tmpfs(mounts, i, kNobody, kNobody, "size=1m");
    ASSERT_TRUE(d.ok()) << d.error();
    struct statfs fs {};
    ASSERT_EQ(statfs(d->c_str(), &fs), 0);
    EXPECT_EQ(fs.f_type, 0x01021994) << *d << " is a tmpfs";
    EXPECT_EQ(fs.f_blocks * fs.f_bsize, 1u << 20) << "of the size asked";
    struct stat st {};
    ASSERT_EQ(stat(d->c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, kNobody);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
  }
  crisp::remove_mount_root(mounts);
  EXPECT_NE(access(mounts.c_str(), F_OK), 0);
}

TEST_F(HostTest, HostArtifactsAreRemovedUnlessKept) {
  std::string log = root_ + "/step.log";
  {
    crisp::HostArtifacts host;
    ASSERT_TRUE(host.open_mount_root(root_ + "/tmpfs", "8.0").ok());
    ASSERT_TRUE(host.make_tmpfs(kNobody, kNobody, "size=1m").ok());
    ASSERT_TRUE(host.make_hca_view(root_, {}, root_ + "/hca/8.0").ok());
    write(log, "x", 0600);
    host.add_file(log);
    EXPECT_EQ(host.mount_root(), root_ + "/tmpfs/8.0");
  }  // a create that failed: all of it goes
  EXPECT_NE(access((root_ + "/tmpfs/8.0").c_str(), F_OK), 0);
  EXPECT_NE(access((root_ + "/hca/8.0").c_str(), F_OK), 0);
  EXPECT_NE(access(log.c_str(), F_OK), 0);
  {
    crisp::HostArtifacts host;
    ASSERT_TRUE(host.open_mount_root(root_ + "/tmpfs", "9.0").ok());
    ASSERT_TRUE(host.make_tmpfs(kNobody, kNobody, "size=1m").ok());
    host.keep();
  }  // a create that succeeded: the container owns it now
  EXPECT_EQ(access((root_ + "/tmpfs/9.0/0").c_str(), F_OK), 0);
  crisp::remove_mount_root(root_ + "/tmpfs/9.0");
}

TEST_F(HostDirTest, HcaViewShowsOnlyTheChosen) {
  // The kernel's /sys/class/infiniband holds relative symlinks into /sys/devices.
  std::string cls = root_ + "/class-ib";
  ASSERT_EQ(mkdir(cls.c_str(), 0755), 0);
  ASSERT_EQ(symlink("../../devices/pci0000:00/x/infiniband/mlx5_0", (cls + "/mlx5_0").c_str()), 0);
  ASSERT_EQ(symlink("../../devices/pci0000:80/y/infiniband/mlx5_1", (cls + "/mlx5_1").c_str()), 0);
  std::string view = root_ + "/views/job.0";
  ASSERT_TRUE(crisp::make_hca_view(cls, {"mlx5_1"}, view).ok());
  char target[256] = {};
  ASSERT_GT(readlink((view + "/mlx5_1").c_str(), target, sizeof target - 1), 0);
  EXPECT_EQ(std::string(target), "../../devices/pci0000:80/y/infiniband/mlx5_1");
  EXPECT_NE(access((view + "/mlx5_0").c_str(), F_OK), 0) << "the other HCA is not shown";
  crisp::remove_hca_view(view);
  EXPECT_NE(access(view.c_str(), F_OK), 0);
}

TEST_F(HostDirTest, HolderEnvironmentIsReadFromProc) {
  auto env = crisp::holder_environment(getpid());
  ASSERT_TRUE(env.ok()) << env.error();
  bool has_path = false;
  for (const std::string& kv : *env) has_path = has_path || kv.rfind("PATH=", 0) == 0;
  EXPECT_TRUE(has_path);
  EXPECT_FALSE(crisp::holder_environment(0).ok());
}

TEST_F(HostDirTest, CriLogIsReadBoundedThenSilenced) {
  std::string path = root_ + "/c.log";
  write(path, "2026-12-02T16:42:55.1Z stdout F one\n2026-12-02T16:42:55.2Z stderr F two\nnot a log line\n", 0600);
  EXPECT_EQ(crisp::CriLogTail(path, 1000, nullptr).messages(), "one\ntwo\n");
  EXPECT_EQ(crisp::CriLogTail(path, 60, nullptr).messages(), "two\n") << "only the end is kept; a line cut in two is dropped";
  ASSERT_TRUE(crisp::silence_cri_log(path).ok());
  char target[64] = {};
  ASSERT_GT(readlink(path.c_str(), target, sizeof target - 1), 0);
  EXPECT_EQ(std::string(target), "/dev/null") << "what the runtime writes after reopening goes nowhere";
}

// An entrypoint that floods its output: the file is rotated while the runtime
// writes, and what is kept is the end of it, bounded.
TEST_F(HostDirTest, CriLogTailRotatesAndKeepsTheEnd) {
  std::string path = root_ + "/flood.log";
  int reopened = 0;
  crisp::CriLogTail tail(path, 100, [&] {
    reopened++;
    write(path, "", 0600);  // the runtime's new file
    return crisp::Status(crisp::Ok{});
  });
  std::string flood;
  for (int i = 0; i < 20; ++i) flood += "2026-12-02T16:42:55.1Z stdout F line " + std::to_string(i) + "\n";
  write(path, flood, 0600);
  tail.rotate_if_large();
  EXPECT_EQ(reopened, 1) << "past twice the bound: rotated";
  EXPECT_EQ(access((path + ".old").c_str(), F_OK), -1) << "the old file is gone";
  write(path, "2026-12-02T16:42:56.1Z stderr F the end\n", 0600);
  tail.rotate_if_large();
  EXPECT_EQ(reopened, 1) << "small: left alone";
  std::string kept = tail.messages();
  EXPECT_LE(kept.size(), 100u);
  EXPECT_NE(kept.find("line 19\nthe end\n"), std::string::npos) << kept;
  EXPECT_EQ(kept.find("line 0\n"), std::string::npos) << kept;
}

TEST(CriLog, LastLinesForAnErrorMessage) {
  EXPECT_EQ(crisp::last_lines("a\nb\nc\n", 2, 100), "b c");
  EXPECT_EQ(crisp::last_lines("a\nb\n", 5, 100), "a b");
  EXPECT_EQ(crisp::last_lines(std::string(50, 'x') + "\n", 1, 10), "...xxxxxxxxxx");
  EXPECT_EQ(crisp::last_lines("", 3, 10), "");
}

TEST(CriLog, MessagesOfBothStreams) {
  std::string m;
  ASSERT_TRUE(crisp::parse_cri_log_line("2026-12-02T16:42:55.123Z stdout F hello world", m));
  EXPECT_EQ(m, "hello world");
  ASSERT_TRUE(crisp::parse_cri_log_line("2026-12-02T16:42:55.123Z stderr P partial", m));
  EXPECT_EQ(m, "partial");
  EXPECT_FALSE(crisp::parse_cri_log_line("garbage", m));
  EXPECT_FALSE(crisp::parse_cri_log_line("t other F x", m));
}

}  // namespace

namespace {

TEST(WorkCgroup, V1HasAGroupInTheCpuAndMemoryHierarchies) {
  crisp::WorkLimits limits{"crisp/squashfs", 1.5, 1ull << 30};
  auto p = crisp::plan_work_cgroup("/sys/fs/cgroup", false, limits);
  EXPECT_EQ(p.dirs, (std::vector<std::string>{"/sys/fs/cgroup/cpu/crisp", "/sys/fs/cgroup/cpu/crisp/squashfs",
                                              "/sys/fs/cgroup/memory/crisp", "/sys/fs/cgroup/memory/crisp/squashfs"}));
  ASSERT_EQ(p.writes.size(), 3u);
  EXPECT_EQ(p.writes[1].file, "/sys/fs/cgroup/cpu/crisp/squashfs/cpu.cfs_quota_us");
  EXPECT_EQ(p.writes[1].value, "150000") << "1.5 cores of a 100 ms period";
  EXPECT_EQ(p.writes[2].file, "/sys/fs/cgroup/memory/crisp/squashfs/memory.limit_in_bytes");
  EXPECT_EQ(p.writes[2].value, "1073741824");
  EXPECT_EQ(p.procs, (std::vector<std::string>{"/sys/fs/cgroup/cpu/crisp/squashfs/cgroup.procs",
                                               "/sys/fs/cgroup/memory/crisp/squashfs/cgroup.procs"}));
}

TEST(WorkCgroup, V2HandsTheControllersDownThenLimits) {
  crisp::WorkLimits limits{"crisp/squashfs", 2, 512ull << 20};
  auto p = crisp::plan_work_cgroup("/sys/fs/cgroup", true, limits);
  EXPECT_EQ(p.dirs, (std::vector<std::string>{"/sys/fs/cgroup/crisp", "/sys/fs/cgroup/crisp/squashfs"}));
  ASSERT_EQ(p.writes.size(), 4u);
  EXPECT_EQ(p.writes[0].file, "/sys/fs/cgroup/cgroup.subtree_control");
  EXPECT_EQ(p.writes[1].file, "/sys/fs/cgroup/crisp/cgroup.subtree_control");
  EXPECT_EQ(p.writes[2].value, "200000 100000");
  EXPECT_EQ(p.writes[3].file, "/sys/fs/cgroup/crisp/squashfs/memory.max");
  EXPECT_EQ(p.procs, (std::vector<std::string>{"/sys/fs/cgroup/crisp/squashfs/cgroup.procs"}));
}

TEST(WorkCgroup, NoNameNoGroupAndNoWayUp) {
  EXPECT_TRUE(crisp::plan_work_cgroup("/sys/fs/cgroup", false, {"", 1, 1ull << 30}).procs.empty());
  auto p = crisp::plan_work_cgroup("/sys/fs/cgroup", true, {"../../etc/x", 1, 1ull << 30});
  EXPECT_EQ(p.dirs, (std::vector<std::string>{"/sys/fs/cgroup/etc", "/sys/fs/cgroup/etc/x"})) << "'..' is dropped";
}

}  // namespace
