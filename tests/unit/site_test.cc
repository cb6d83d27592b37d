// The site's container configuration: enroot's file forms parsed, the admin's paths
// opened only where no user can change them, the files read only where root alone writes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "agent/host/admin_paths.h"
#include "agent/site/enroot_conf.h"
#include "agent/site/site_config.h"
#include "agent/site/user_site_dir.h"
#include "agent/site/site_files.h"
#include "tests/unit/test_dir.h"

namespace {

namespace fs = std::filesystem;

crisp::EnvLookup lookup_in(std::map<std::string, std::string, std::less<>> env) {
  return [env = std::move(env)](std::string_view n) -> std::optional<std::string> {
    auto it = env.find(n);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

TEST(SiteFiles, SubstitutesBracedNamesOnlyAsEnrootDoes) {
  auto env = lookup_in({{"USER", "alice"}, {"HOME", "/home/alice"}});
  bool used = false;
  EXPECT_EQ(crisp::substitute_env("/lustre/${USER}/x", env, &used), "/lustre/alice/x");
  EXPECT_TRUE(used);
  used = false;
  EXPECT_EQ(crisp::substitute_env("$USER ${UNSET}end ${1BAD} ${open", env, &used), "$USER end ${1BAD} ${open");
  EXPECT_TRUE(used) << "an unset name is still substituted (by nothing)";
  used = false;
  EXPECT_EQ(crisp::substitute_env("plain", env, &used), "plain");
  EXPECT_FALSE(used);
}

TEST(SiteFiles, FstabLinesWithOmittedFieldsEscapesAndComments) {
  auto env = lookup_in({{"USER", "a b"}});
  auto none = crisp::parse_fstab_line("   # a comment", env);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_FALSE(crisp::parse_fstab_line("", env)->has_value());
  auto two = crisp::parse_fstab_line("/etc/slurm /etc/slurm", env);
  ASSERT_TRUE(two.ok() && two->has_value());
  EXPECT_EQ((*two)->type, "");
  EXPECT_TRUE((*two)->options.empty());
  auto full = crisp::parse_fstab_line("/data\\040set /mnt/${USER}\tnone\tx-create=dir,bind,ro 0 0", env);
  ASSERT_TRUE(full.ok() && full->has_value());
  EXPECT_EQ((*full)->source, "/data set");
  EXPECT_FALSE((*full)->source_from_env);
  EXPECT_EQ((*full)->target, "/mnt/a b") << "a value is one field's, never more fields";
  EXPECT_EQ((*full)->options, (std::vector<std::string>{"x-create=dir", "bind", "ro"}));
  auto from_env = crisp::parse_fstab_line("/home/${USER} /home", env);
  EXPECT_TRUE((*from_env)->source_from_env);
  EXPECT_FALSE(crisp::parse_fstab_line("/only-one", env).ok());
  EXPECT_FALSE(crisp::parse_fstab_line("a b c d e f g", env).ok());
}

TEST(SiteFiles, MountsAreBindMountsReadOnlyUnlessTheFileIsEnroots) {
  auto env = lookup_in({});
  auto line = [&](const char* text) { return **crisp::parse_fstab_line(text, env); };
  auto crisp_own = crisp::site_mount_of(line("/etc/slurm /etc/slurm none x-create=dir,bind,nosuid"), false);
  ASSERT_TRUE(crisp_own.ok()) << crisp_own.error();
  EXPECT_TRUE(crisp_own->readonly);
  EXPECT_EQ(crisp_own->ignored, (std::vector<std::string>{"nosuid"}));
  auto enroots = crisp::site_mount_of(line("/scratch /scratch none x-create=dir,bind,rslave"), true);
  ASSERT_TRUE(enroots.ok());
  EXPECT_FALSE(enroots->readonly);
  EXPECT_EQ(enroots->propagation, "rslave");
  EXPECT_TRUE(crisp::site_mount_of(line("/a /b none bind,ro,nofail"), true)->readonly);
  EXPECT_TRUE(crisp::site_mount_of(line("/a /b none bind,ro,nofail"), true)->optional);
  EXPECT_FALSE(crisp::site_mount_of(line("/a /b none rw"), false)->readonly);
  for (const char* bad : {"server:/x /x nfs defaults", "tmpfs /tmp tmpfs uid=0", "rel /x", "/x rel", "/a/../etc /x",
                          "/x /a/../b", "/a /b none bind,uid=0", "tmpfs /dev/shm tmpfs size=1g"})
    EXPECT_FALSE(crisp::site_mount_of(line(bad), false).ok()) << bad;
}

TEST(SiteFiles, TmpfsLinesKeepTheOptionsATmpfsTakes) {
  auto env = lookup_in({{"SIZE", "2g"}});
  auto tmp = crisp::site_mount_of(**crisp::parse_fstab_line("tmpfs /scratch tmpfs x-create=dir,size=${SIZE},mode=1777,nosuid,rw", env), false);
  ASSERT_TRUE(tmp.ok()) << tmp.error();
  EXPECT_TRUE(tmp->tmpfs);
  EXPECT_EQ(tmp->target, "/scratch");
  EXPECT_EQ(tmp->source, "") << "a tmpfs has no source to open";
  EXPECT_EQ(tmp->tmpfs_options, "size=2g,mode=1777");
  EXPECT_FALSE(tmp->readonly);
  EXPECT_FALSE(tmp->source_from_env);
}

TEST(SiteFiles, SubstitutesNamesInsideWhatIsNoName) {
  auto env = lookup_in({{"B", "b"}, {"HOME", "/h"}});
  EXPECT_EQ(crisp::substitute_env("${A${B}} ${ ${HOME} $${HOME}", env), "${Ab} ${ /h $/h");
}

TEST(SiteFiles, TheRuntimesTreesAreLeftToIt) {
  auto env = lookup_in({});
  // enroot's own mounts.d/10-system.fstab binds the host's /proc, /sys and /dev.
  for (const char* l : {"/proc /proc none x-create=dir,bind,rw", "/sys /sys none rbind", "/dev /dev none rbind",
                        "/dev/shm /dev/shm none x-create=dir,bind,rw", "/var /proc/x none bind"})
    EXPECT_FALSE(crisp::site_mount_of(**crisp::parse_fstab_line(l, env), true).ok()) << l;
  EXPECT_TRUE(crisp::site_mount_of(**crisp::parse_fstab_line("/etc/localtime /etc/localtime none bind,ro,silent", env), true)
                  .ok());
  EXPECT_TRUE(crisp::site_mount_of(**crisp::parse_fstab_line("/devices /devices none bind", env), true).ok());
}

TEST(SiteFiles, EnvironLinesAsEnvfmtLeavesThem) {
  auto env = lookup_in({{"HOME", "/home/alice"}, {"LEAD", "  "}});
  auto lines = crisp::parse_environ_lines(
      "  NCCL_IB_HCA=mlx5\n# comment\n\nexport X=1\nENROOT_REMAP_ROOT=y\nQ=\"quoted value\"  \nS='single'\n"
      "CACHE=${HOME}/.cache\nKEEP=a\"b\nR=x\r\n${LEAD}L=1\n",
      env);
  EXPECT_EQ(lines, (std::vector<std::string>{"NCCL_IB_HCA=mlx5", "Q=quoted value", "S=single", "CACHE=/home/alice/.cache",
                                             "KEEP=a\"b", "R=x\r", "L=1"}));
  std::string many;
  for (int i = 0; i < 10000; ++i) many += "V" + std::to_string(i) + "=1\n";
  EXPECT_EQ(crisp::parse_environ_lines(many, env).size(), crisp::kMaxSiteEnv) << "bounded";
}

TEST(SiteFiles, EnrootConfSettingsAndWhatCrispDoesInstead) {
  auto settings = crisp::parse_enroot_conf(
      "#ENROOT_LIBRARY_PATH        /usr/lib/enroot\n  ENROOT_MOUNT_HOME   yes\r\n\nENROOT_ALLOW_HTTP\tyes\n"
      "ENROOT_SQUASH_OPTIONS -comp lz4 -noD\nPATH /bin\nENROOT_EMPTY\n");
  EXPECT_EQ(settings, (std::vector<std::pair<std::string, std::string>>{{"ENROOT_MOUNT_HOME", "yes"},
                                                                        {"ENROOT_ALLOW_HTTP", "yes"},
                                                                        {"ENROOT_SQUASH_OPTIONS", "-comp lz4 -noD"},
                                                                        {"ENROOT_EMPTY", ""}}));
  EXPECT_NE(crisp::crisp_meaning_of("ENROOT_ALLOW_HTTP").find("hosts.toml"), std::string::npos);
  EXPECT_NE(crisp::crisp_meaning_of("ENROOT_MOUNT_HOME").find("--container-mount-home"), std::string::npos);
  EXPECT_NE(crisp::crisp_meaning_of("ENROOT_DATA_PATH").find("not used"), std::string::npos);
  std::string many;
  for (int i = 0; i < 1000; ++i) many += "ENROOT_X" + std::to_string(i) + " 1\n";
  EXPECT_EQ(crisp::parse_enroot_conf(many).size(), crisp::kMaxEnrootSettings) << "bounded";
}

// A directory tree of the test's, as root (the unit tests run as root in dev/test.sh).
class SiteDirTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE((dir_ = crisp_test::make_test_dir("site")).empty()); }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& rel, const std::string& text, mode_t mode = 0644) {
    fs::create_directories(fs::path(dir_ + "/" + rel).parent_path());
    std::ofstream(dir_ + "/" + rel) << text;
    ASSERT_EQ(chmod((dir_ + "/" + rel).c_str(), mode), 0);
  }
  std::string dir_;
};

TEST_F(SiteDirTest, AdminPathsOnlyThroughWhatNoUserCanChange) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (file owners)";
  write("etc/slurm/slurm.conf", "x");
  auto ok = crisp::open_admin_path(dir_ + "/etc/slurm");
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_TRUE(ok->is_directory);
  EXPECT_EQ(crisp::open_admin_path(dir_ + "/missing").error_kind(), crisp::ErrorKind::kNotFound);
  // A user's directory on the way, a directory others may write, a symlink: refused.
  fs::create_directories(dir_ + "/users/alice/data");
  ASSERT_EQ(chown((dir_ + "/users/alice").c_str(), 4242, 4242), 0);
  EXPECT_EQ(crisp::open_admin_path(dir_ + "/users/alice/data").error_kind(), crisp::ErrorKind::kRefused);
  fs::create_directories(dir_ + "/open/x");
  ASSERT_EQ(chmod((dir_ + "/open").c_str(), 0777), 0);
  EXPECT_EQ(crisp::open_admin_path(dir_ + "/open/x").error_kind(), crisp::ErrorKind::kRefused);
  ASSERT_EQ(chmod((dir_ + "/open").c_str(), 01777), 0);
  EXPECT_TRUE(crisp::open_admin_path(dir_ + "/open/x").ok()) << "sticky: no one renames root's entry";
  fs::create_symlink(dir_ + "/etc", dir_ + "/link");
  EXPECT_EQ(crisp::open_admin_path(dir_ + "/link/slurm").error_kind(), crisp::ErrorKind::kRefused);
  EXPECT_EQ(crisp::open_admin_path(dir_ + "/link").error_kind(), crisp::ErrorKind::kRefused);
  EXPECT_EQ(crisp::open_admin_path(dir_ + "/etc/slurm/slurm.conf/x").error_kind(), crisp::ErrorKind::kNotFound);
  // A root file linked under the admin's name in a sticky directory (protected_hardlinks off).
  write("open/tool", "x");
  ASSERT_EQ(link((dir_ + "/open/tool").c_str(), (dir_ + "/open/tool-link").c_str()), 0);
  EXPECT_EQ(crisp::open_admin_path(dir_ + "/open/tool").error_kind(), crisp::ErrorKind::kRefused);
  EXPECT_TRUE(crisp::open_admin_path(dir_ + "/etc/slurm/slurm.conf").ok()) << "a file of its own, where no one else writes";
  EXPECT_EQ(crisp::open_admin_path("relative").error_kind(), crisp::ErrorKind::kFailed);
}

TEST_F(SiteDirTest, FilesReadInNameOrderWithPartitionsAfterEveryones) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (file owners)";
  write("crisp/mounts.d/20-b.fstab", "/b /b\n");
  write("crisp/mounts.d/10-a.fstab", "/a /a\n# c\n");
  write("crisp/mounts.d/30-not-fstab.conf", "/x /x\n");
  write("crisp/environ.d/10.env", "A=1\n");
  write("crisp/partitions/gpu/environ.d/10.env", "G=1\n");
  write("crisp/partitions/gpu/mounts.d/10.fstab", "/g /g\n");
  write("enroot/mounts.d/10.fstab", "/e /e\n");
  write("enroot/partitions/gpu/mounts.d/10.fstab", "/never /never\n");
  crisp::SiteConfig config({{dir_ + "/enroot", true}, {dir_ + "/crisp", false}});
  EXPECT_TRUE(config.has_partitions());
  auto all = config.lines_for("");
  std::vector<std::string> texts;
  for (const auto& l : all.mounts) texts.push_back(l.text);
  EXPECT_EQ(texts, (std::vector<std::string>{"/e /e", "", "/a /a", "# c", "", "/b /b", ""}));
  EXPECT_TRUE(all.mounts[0].read_write_default);
  EXPECT_FALSE(all.mounts[2].read_write_default);
  EXPECT_EQ(all.mounts[2].origin, dir_ + "/crisp/mounts.d/10-a.fstab:1");
  auto gpu = config.lines_for("gpu");
  EXPECT_EQ(gpu.mounts.back().text, "");
  EXPECT_EQ(gpu.mounts[gpu.mounts.size() - 2].text, "/g /g");
  ASSERT_EQ(gpu.environ.size(), 2u);
  EXPECT_EQ(gpu.environ[1].text, "G=1\n");
  EXPECT_EQ(config.lines_for("../crisp").environ.size(), 1u) << "a partition name is no path";
}

TEST_F(SiteDirTest, FilesOthersMayWriteAreSkipped) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (file owners)";
  write("crisp/environ.d/10-open.env", "OPEN=1\n", 0666);
  write("crisp/environ.d/20-users.env", "USERS=1\n");
  ASSERT_EQ(chown((dir_ + "/crisp/environ.d/20-users.env").c_str(), 4242, 4242), 0);
  write("crisp/environ.d/30-ok.env", "OK=1\n");
  crisp::SiteConfig config({{dir_ + "/crisp", false}});
  auto lines = config.lines_for("");
  ASSERT_EQ(lines.environ.size(), 1u);
  EXPECT_EQ(lines.environ[0].text, "OK=1\n");
  ASSERT_EQ(chmod((dir_ + "/crisp/environ.d").c_str(), 0777), 0);
  EXPECT_TRUE(config.lines_for("").environ.empty()) << "a directory others may write is not the admin's";
}

TEST_F(SiteDirTest, HooksInNameOrderEnrootsStandardOnesLeftToCrisp) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (file owners)";
  write("crisp/hooks.d/20-license", "#!/bin/sh\n", 0755);
  write("crisp/hooks.d/10-fabric", "#!/bin/sh\n", 0755);
  write("crisp/hooks.d/15-fabric.dpkg-old", "#!/bin/sh\n", 0755);  // not a run-parts name
  write("crisp/hooks.d/30-not-executable", "#!/bin/sh\n", 0644);
  write("crisp/hooks.d/40-users", "#!/bin/sh\n", 0755);
  ASSERT_EQ(chown((dir_ + "/crisp/hooks.d/40-users").c_str(), 4242, 4242), 0);
  write("crisp/root-hooks.d/10-quota", "#!/bin/sh\n", 0700);
  write("crisp/partitions/gpu/hooks.d/10-gpu", "#!/bin/sh\n", 0755);
  write("enroot/hooks.d/10-devices.sh", "#!/bin/bash\n", 0755);  // enroot's own: crisp does its work
  write("enroot/hooks.d/50-site.sh", "#!/bin/bash\n", 0755);
  write("enroot/hooks.d/60-site", "#!/bin/bash\n", 0755);  // enroot runs *.sh alone
  crisp::SiteConfig config({{dir_ + "/enroot", true}, {dir_ + "/crisp", false}});
  auto hooks = [this](const crisp::SiteLines& l) {
    std::vector<std::string> out;
    for (const auto& h : l.hooks) out.push_back(h.path.substr(dir_.size()) + (h.as_root ? " root" : ""));
    return out;
  };
  EXPECT_EQ(hooks(config.lines_for("")), (std::vector<std::string>{"/enroot/hooks.d/50-site.sh", "/crisp/hooks.d/10-fabric",
                                                                    "/crisp/hooks.d/20-license", "/crisp/root-hooks.d/10-quota root"}));
  EXPECT_EQ(hooks(config.lines_for("gpu")).back(), "/crisp/partitions/gpu/hooks.d/10-gpu");
  ASSERT_EQ(chmod((dir_ + "/crisp/hooks.d").c_str(), 0777), 0);
  EXPECT_EQ(hooks(config.lines_for("")).size(), 2u) << "a directory others may write is not the admin's";
}

TEST(SiteFiles, TheUsersEnrootDirectoryAsEnrootFindsIt) {
  EXPECT_EQ(crisp::user_enroot_dir(lookup_in({{"ENROOT_CONFIG_PATH", "/c"}, {"HOME", "/h"}})), "/c");
  EXPECT_EQ(crisp::user_enroot_dir(lookup_in({{"XDG_CONFIG_HOME", "/x"}, {"HOME", "/h"}})), "/x/enroot");
  EXPECT_EQ(crisp::user_enroot_dir(lookup_in({{"HOME", "/h"}})), "/h/.config/enroot");
  EXPECT_EQ(crisp::user_enroot_dir(lookup_in({{"ENROOT_CONFIG_PATH", "relative"}})), std::nullopt);
  EXPECT_EQ(crisp::user_enroot_dir(lookup_in({})), std::nullopt);
}

// A user's own enroot files, read with their rights: a file they cannot read adds nothing,
// and every line is marked theirs (resolved and run as them).
TEST_F(SiteDirTest, TheUsersOwnFilesAreReadAsThem) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (the user's ids)";
  write("enroot/mounts.d/10.fstab", "${HOME}/data /data none bind\n");
  write("enroot/environ.d/10.env", "MINE=1\n");
  write("enroot/environ.d/20-roots.env", "SECRET=1\n", 0600);
  write("enroot/hooks.d/10-mine.sh", "#!/bin/sh\n", 0755);
  write("enroot/hooks.d/README", "not a hook\n");
  for (const char* p : {"enroot", "enroot/mounts.d", "enroot/environ.d", "enroot/environ.d/10.env", "enroot/hooks.d",
                        "enroot/mounts.d/10.fstab"})
    ASSERT_EQ(chown((dir_ + "/" + p).c_str(), 65534, 65534), 0);
  crisp::SiteLines lines;
  ASSERT_TRUE(crisp::read_user_enroot_dir({65534, 65534, {}}, dir_ + "/enroot", lines).ok());
  ASSERT_EQ(lines.mounts.size(), 2u);  // the line, and the empty one after its newline
  EXPECT_TRUE(lines.mounts[0].users);
  EXPECT_EQ(lines.mounts[0].origin, dir_ + "/enroot/mounts.d/10.fstab:1");
  ASSERT_EQ(lines.environ.size(), 1u) << "root's 0600 file is not the user's to read";
  EXPECT_EQ(lines.environ[0].text, "MINE=1\n");
  ASSERT_EQ(lines.hooks.size(), 1u);
  EXPECT_EQ(lines.hooks[0].path, dir_ + "/enroot/hooks.d/10-mine.sh");
  EXPECT_FALSE(lines.hooks[0].as_root);
  crisp::SiteLines none;
  EXPECT_TRUE(crisp::read_user_enroot_dir({65534, 65534, {}}, dir_ + "/absent", none).ok());
  EXPECT_TRUE(none.mounts.empty() && none.environ.empty() && none.hooks.empty());
}

}  // namespace
