// The site's hooks as run_site_hook runs them: enroot's variables and files, the user's ids,
// one line for a failure, and nothing left running after a hook that hung or detached.
// Needs root (a PID namespace, the user's ids).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "agent/host/site_hook.h"
#include "common/files.h"
#include "tests/unit/test_dir.h"

namespace {

constexpr uint32_t kNobody = 65534;

class SiteHookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    dir_ = crisp_test::make_test_dir("site-hook");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::string hook(const std::string& name, const std::string& body) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    chmod(path.c_str(), 0755);
    return path;
  }
  crisp::SiteHookRun run_of(const std::string& path, bool as_user = true) {
    crisp::SiteHookRun run;
    run.path = path;
    if (as_user) run.as_user = crisp::UserCreds{kNobody, kNobody, {}};
    run.holder_pid = getpid();
    run.holder_start = *crisp::process_start_time(getpid());
    run.env = {"PATH=/usr/bin:/bin", "FROM_JOB=yes"};
    run.timeout = std::chrono::seconds(2);
    run.in_container_cgroups = false;
    return run;
  }
  // Whether a process whose command line holds marker ("sleep N") still runs ("[s]leep": not
  // the shell that runs pgrep, whose command line holds the pattern).
  static bool running(const std::string& marker) {
    return std::system(("pgrep -f '[" + marker.substr(0, 1) + "]" + marker.substr(1) + "' >/dev/null").c_str()) == 0;
  }
  std::string dir_;
};

TEST_F(SiteHookTest, GetsEnrootsVariablesAndWritesItsFiles) {
  auto out = crisp::run_site_hook(run_of(hook("ok", "echo \"PID=$ENROOT_PID\" >> \"$ENROOT_ENVIRON\"\n"
                                                     "echo \"ID=$(id -u) $FROM_JOB $ENROOT_ROOTFS\" >> \"$ENROOT_ENVIRON\"\n"
                                                     "echo '/a /b none bind' >> \"$ENROOT_MOUNTS\"")));
  ASSERT_TRUE(out) << out.error();
  std::string pid = std::to_string(getpid());
  EXPECT_EQ(out->environ, "PID=" + pid + "\nID=65534 yes /proc/" + pid + "/root\n");
  EXPECT_EQ(out->mounts, "/a /b none bind\n");
}

TEST_F(SiteHookTest, RunsAsRootOnlyWhenAskedAndThenWithoutThePathThroughTheUsersRoot) {
  auto out = crisp::run_site_hook(
      run_of(hook("root", "echo \"ID=$(id -u) ${ENROOT_ROOTFS-none} ${ENROOT_PID:+pid}\" >> \"$ENROOT_ENVIRON\""), false));
  ASSERT_TRUE(out) << out.error();
  EXPECT_EQ(out->environ, "ID=0 none pid\n");
}

TEST_F(SiteHookTest, GetsNoDescriptorOfCrispdsButItsStreamsAndFiles) {
  auto out = crisp::run_site_hook(run_of(hook("fds", "ls /proc/self/fd | tr '\\n' ' ' >> \"$ENROOT_ENVIRON\"")));
  ASSERT_TRUE(out) << out.error();
  // ls's own listing of the directory is the one past 4.
  EXPECT_EQ(out->environ, "0 1 2 3 4 5 ");
}

TEST_F(SiteHookTest, AHolderThatIsGoneIsNeverAHooksTarget) {
  auto run = run_of(hook("never", "echo ran >> \"$ENROOT_ENVIRON\""));
  run.holder_start += 1;  // another process of that number
  auto out = crisp::run_site_hook(run);
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().find("could not run: the step's container exited"), std::string::npos) << out.error();
}

TEST_F(SiteHookTest, AFailureIsOneLineWithWhatItSaid) {
  std::string path = hook("bad", "echo first >&2\necho 'no license \033[31mserver' >&2\nexit 3");
  auto out = crisp::run_site_hook(run_of(path));
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error(), "the site's hook " + path + " failed (exit status 3): no license ?[31mserver");
}

// The hook's detached child, started and seen running (written to seen), then the hook's end.
std::string detach(const std::string& marker, const std::string& seen, const std::string& end) {
  return "setsid " + marker + " </dev/null >/dev/null 2>&1 &\nsleep 0.3\npgrep -f '[" + marker.substr(0, 1) + "]" +
         marker.substr(1) + "' >/dev/null && echo started > " + seen + "\n" + end;
}

TEST_F(SiteHookTest, AHangingHookAndWhatItStartedAreEnded) {
  std::string marker = "sleep 1234." + std::to_string(getpid()), seen = dir_ + "/seen-hang";
  std::ofstream(seen).flush();
  chmod(seen.c_str(), 0666);
  auto started = std::chrono::steady_clock::now();
  auto out = crisp::run_site_hook(run_of(hook("hang", detach(marker, seen, "exec sleep 100"))));
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error_kind(), crisp::ErrorKind::kTimedOut);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  std::string text;
  std::getline(std::ifstream(seen), text);
  EXPECT_EQ(text, "started") << "the hook's child ran";
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(running(marker)) << "the detached child outlived its hook";
}

TEST_F(SiteHookTest, WhatASucceedingHookDetachesEndsWithIt) {
  std::string marker = "sleep 777." + std::to_string(getpid()), seen = dir_ + "/seen-detach";
  std::ofstream(seen).flush();
  chmod(seen.c_str(), 0666);
  auto out = crisp::run_site_hook(run_of(hook("detach", detach(marker, seen, "exit 0"))));
  ASSERT_TRUE(out) << out.error();
  std::string text;
  std::getline(std::ifstream(seen), text);
  EXPECT_EQ(text, "started") << "the hook's child ran";
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(running(marker));
}

TEST_F(SiteHookTest, ItsFilesAreBounded) {
  auto out = crisp::run_site_hook(run_of(hook("big", "head -c 2000000 /dev/zero | tr '\\0' a >> \"$ENROOT_ENVIRON\"")));
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().find("wrote more than 1 MiB to ENROOT_ENVIRON"), std::string::npos) << out.error();
}

}  // namespace
