// What crispd does on the host for a user: file access with the user's
// credentials, tmpfs mounts, the HCA view, the entrypoint's log, and the owner
// that undoes them. Root-only cases (setuid, mount) skip where not root.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <fstream>

#include "agent/host/entrypoint.h"
#include "agent/host/hca_view.h"
#include "agent/host/host_artifacts.h"
#include "agent/host/tmpfs.h"
#include "agent/host/user_access.h"

namespace {

constexpr uint32_t kNobody = 65534;

class HostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/crisp-host-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    ASSERT_EQ(chmod(root_.c_str(), 0755), 0);
  }
  void TearDown() override { (void)!system(("umount -R -l " + root_ + "/* 2>/dev/null; rm -rf " + root_).c_str()); }
  void write(const std::string& path, const std::string& text, mode_t mode) {
    std::ofstream(path) << text;
    ASSERT_EQ(chmod(path.c_str(), mode), 0);
  }
  static void need_root() {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (credentials, mounts)";
  }
  std::string root_;
  crisp::UserCreds nobody_{kNobody, kNobody, {}};
};

TEST_F(HostTest, ReadAsUserSeesOnlyWhatTheUserMayRead) {
  need_root();
  write(root_ + "/public", "for all", 0644);
  write(root_ + "/secret", "root only", 0600);
  auto pub = crisp::read_file_as_user(nobody_, root_ + "/public", 100);
  ASSERT_TRUE(pub.ok()) << pub.error();
  EXPECT_EQ(*pub, "for all");
  auto secret = crisp::read_file_as_user(nobody_, root_ + "/secret", 100);
  ASSERT_FALSE(secret.ok());
  EXPECT_EQ(secret.error(), root_ + "/secret: Permission denied");
  EXPECT_TRUE(crisp::read_file_as_user({0, 0, {}}, root_ + "/secret", 100).ok()) << "root itself may";
}

TEST_F(HostTest, ReadAsUserFollowsNoFinalSymlinkAndIsBounded) {
  need_root();
  write(root_ + "/big", std::string(101, 'x'), 0644);
  ASSERT_EQ(symlink((root_ + "/big").c_str(), (root_ + "/link").c_str()), 0);
  auto big = crisp::read_file_as_user(nobody_, root_ + "/big", 100);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error(), root_ + "/big is larger than 100 bytes");
  auto link = crisp::read_file_as_user(nobody_, root_ + "/link", 1000);
  ASSERT_FALSE(link.ok()) << "a symlink as the file itself is not followed";
  EXPECT_NE(link.error().find("Too many levels of symbolic links"), std::string::npos) << link.error();
}

TEST_F(HostTest, ResolveAsUserChecksEveryStepWithTheUsersRights) {
  need_root();
  ASSERT_EQ(mkdir((root_ + "/open").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root_ + "/closed").c_str(), 0700), 0);
  ASSERT_EQ(mkdir((root_ + "/closed/inner").c_str(), 0777), 0);
  ASSERT_EQ(symlink((root_ + "/closed/inner").c_str(), (root_ + "/open/way-in").c_str()), 0);
  auto open = crisp::resolve_as_user(nobody_, root_ + "/open/../open");
  ASSERT_TRUE(open.ok()) << open.error();
  EXPECT_EQ(*open, root_ + "/open") << "resolved, .. and all";
  auto in = crisp::resolve_as_user(nobody_, root_ + "/open/way-in");
  ASSERT_FALSE(in.ok()) << "a symlink into a directory the user cannot search";
  EXPECT_NE(in.error().find("Permission denied"), std::string::npos) << in.error();
  EXPECT_FALSE(crisp::resolve_as_user(nobody_, root_ + "/missing").ok());
  EXPECT_TRUE(crisp::resolve_as_user({0, 0, {}}, root_ + "/open/way-in").ok());
}

TEST_F(HostTest, HomeComesFromThePasswordDatabase) {
  auto home = crisp::home_of(0);
  ASSERT_TRUE(home.ok()) << home.error();
  EXPECT_EQ(*home, "/root");
  auto none = crisp::home_of(4000000000u);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error(), "uid 4000000000 has no home directory in the password database");
}

TEST_F(HostTest, TmpfsMountsBelongToTheUserAndGoAway) {
  need_root();
  auto dirs = crisp::make_tmpfs(root_ + "/tmpfs", "7.0", 2, kNobody, kNobody);
  ASSERT_TRUE(dirs.ok()) << dirs.error();
  ASSERT_EQ(dirs->size(), 2u);
  for (const std::string& d : *dirs) {
    struct statfs fs {};
    ASSERT_EQ(statfs(d.c_str(), &fs), 0);
    EXPECT_EQ(fs.f_type, 0x01021994) << d << " is a tmpfs";
    struct stat st {};
    ASSERT_EQ(stat(d.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, kNobody);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
  }
  crisp::remove_tmpfs(root_ + "/tmpfs/7.0");
  EXPECT_NE(access((root_ + "/tmpfs/7.0").c_str(), F_OK), 0);
}

TEST_F(HostTest, HostArtifactsAreRemovedUnlessKept) {
  need_root();
  std::string log = root_ + "/step.log";
  {
    crisp::HostArtifacts host;
    ASSERT_TRUE(host.make_tmpfs(root_ + "/tmpfs", "8.0", 1, kNobody, kNobody).ok());
    ASSERT_TRUE(host.make_hca_view(root_, {}, root_ + "/hca/8.0").ok());
    write(log, "x", 0600);
    host.add_file(log);
    EXPECT_EQ(host.tmpfs_root(), root_ + "/tmpfs/8.0");
  }  // a create that failed: all of it goes
  EXPECT_NE(access((root_ + "/tmpfs/8.0").c_str(), F_OK), 0);
  EXPECT_NE(access((root_ + "/hca/8.0").c_str(), F_OK), 0);
  EXPECT_NE(access(log.c_str(), F_OK), 0);
  {
    crisp::HostArtifacts host;
    ASSERT_TRUE(host.make_tmpfs(root_ + "/tmpfs", "9.0", 1, kNobody, kNobody).ok());
    host.keep();
  }  // a create that succeeded: the container owns it now
  EXPECT_EQ(access((root_ + "/tmpfs/9.0/0").c_str(), F_OK), 0);
  crisp::remove_tmpfs(root_ + "/tmpfs/9.0");
}

TEST_F(HostTest, HcaViewShowsOnlyTheChosen) {
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

TEST_F(HostTest, HolderEnvironmentIsReadFromProc) {
  auto env = crisp::holder_environment(getpid());
  ASSERT_TRUE(env.ok()) << env.error();
  bool has_path = false;
  for (const std::string& kv : *env) has_path = has_path || kv.rfind("PATH=", 0) == 0;
  EXPECT_TRUE(has_path);
  EXPECT_FALSE(crisp::holder_environment(0).ok());
}

TEST_F(HostTest, CriLogIsReadAndRemoved) {
  std::string path = root_ + "/c.log";
  write(path, "2026-12-02T16:42:55.1Z stdout F one\n2026-12-02T16:42:55.2Z stderr F two\nnot a log line\n", 0600);
  EXPECT_EQ(crisp::read_cri_log(path), "one\ntwo\n");
  EXPECT_NE(access(path.c_str(), F_OK), 0);
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
