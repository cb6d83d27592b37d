// The small shared pieces: subprocesses, files, descriptors, Slurm's ids, the
// password database, the log's levels.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "common/cgroups.h"
#include "common/env.h"
#include "common/fd.h"
#include "common/files.h"
#include "common/log.h"
#include "common/passwd.h"
#include "common/slurm_ids.h"
#include "common/subprocess.h"

namespace {

using namespace std::chrono_literals;

TEST(Subprocess, CapturesOutputFeedsInputAndNamesTheStatus) {
  crisp::ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", "read x; echo got $x; echo oops >&2; exit 3"};
  spec.input = "hello\n";
  auto r = crisp::run_process(spec);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->out, "got hello\n");
  EXPECT_EQ(r->err, "oops\n");
  EXPECT_FALSE(r->succeeded());
  EXPECT_EQ(r->status_text(), "exit status 3");
}

TEST(Subprocess, EnvironmentIsTheGivenOneOnly) {
  crisp::ProcessSpec spec;
  spec.argv = {"/usr/bin/env"};
  spec.env = std::vector<std::string>{"ONLY=this"};
  auto r = crisp::run_process(spec);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->out, "ONLY=this\n");
}

TEST(Subprocess, ADeadlineKillsIt) {
  crisp::ProcessSpec spec;
  spec.argv = {"/bin/sleep", "10"};
  spec.timeout = 200ms;
  auto t0 = std::chrono::steady_clock::now();
  auto r = crisp::run_process(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error_kind(), crisp::ErrorKind::kTimedOut);
  EXPECT_EQ(r.error(), "/bin/sleep did not finish within 0 s");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

TEST(Subprocess, AProgramThatIgnoresItsInputAndOneThatCannotRun) {
  crisp::ProcessSpec spec;
  spec.argv = {"/bin/true"};
  spec.input = std::string(1 << 20, 'x');  // more than a pipe holds
  auto r = crisp::run_process(spec);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->succeeded());
  spec.argv = {"/no/such/program"};
  auto missing = crisp::run_process(spec);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), "/no/such/program cannot run: No such file or directory");
}

TEST(Subprocess, OutputIsBounded) {
  crisp::ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", "head -c 100000 /dev/zero; echo end >&2"};
  spec.max_output = 1000;
  auto r = crisp::run_process(spec);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->out.size(), 1000u) << "the rest is read and dropped";
  EXPECT_EQ(r->err, "end\n");
}

TEST(Subprocess, TheChildGetsOnlyItsThreeStreams) {
  crisp::ProcessSpec spec;
  spec.argv = {"/bin/ls", "/proc/self/fd"};
  auto r = crisp::run_process(spec);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->out, "0\n1\n2\n3\n") << "0-2 and ls's own listing of the directory: nothing of the caller's";
}

TEST(Files, ReadTextIsBoundedAndNamesTheFile) {
  char tmpl[] = "/tmp/crisp-files-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  std::ofstream(dir + "/b") << "12345";
  std::ofstream(dir + "/a") << "";
  EXPECT_EQ(*crisp::read_text(dir + "/b"), "12345");
  auto big = crisp::read_text(dir + "/b", 4);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error(), dir + "/b is larger than 4 bytes");
  EXPECT_EQ(crisp::read_text(dir + "/c").error(), "cannot read " + dir + "/c: No such file or directory");
  EXPECT_EQ(crisp::list_dir(dir), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(crisp::list_dir(dir + "/c").empty());
  (void)!system(("rm -rf " + dir).c_str());
}

// What moving a container's processes into Slurm's cgroups may leave behind: a process that
// exited (a zombie keeps PF_EXITING until reaped), or one gone; a running one is not.
TEST(Files, ProcessExitingOnlyOnceItRunsNothingOfItsOwn) {
  EXPECT_FALSE(crisp::process_exiting(getpid()));
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, child, &info, WEXITED | WNOWAIT), 0);  // a zombie, not reaped yet
  EXPECT_TRUE(crisp::process_exiting(child));
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_TRUE(crisp::process_exiting(child)) << "gone";
}

TEST(Fd, ClosesOnceAndMoves) {
  int raw = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(raw, 0);
  {
    crisp::Fd a(raw);
    crisp::Fd b(std::move(a));
    EXPECT_FALSE(a.valid());
    EXPECT_EQ(b.get(), raw);
  }
  EXPECT_EQ(fcntl(raw, F_GETFD), -1) << "closed when its owner went";
  crisp::Fd c(open("/dev/null", O_RDONLY | O_CLOEXEC));
  int kept = c.release();
  EXPECT_FALSE(c.valid());
  EXPECT_NE(fcntl(kept, F_GETFD), -1) << "release gives it up open";
  close(kept);
}

TEST(SlurmIds, SpecialStepsHaveNames) {
  EXPECT_EQ(crisp::slurm::step_name(crisp::slurm::kBatchStep), "batch");
  EXPECT_EQ(crisp::slurm::step_name(crisp::slurm::kExternStep), "extern");
  EXPECT_EQ(crisp::slurm::step_name(crisp::slurm::kInteractiveStep), "interactive");
  EXPECT_EQ(crisp::slurm::step_name(3), "3");
  EXPECT_EQ(crisp::slurm::step_text(12, crisp::slurm::kBatchStep), "job 12 step batch");
}

TEST(EnvValue, FirstMatchOfTheWholeName) {
  std::vector<std::string> env = {"PATHX=no", "PATH=/a", "PATH=/b", "EMPTY=", "BROKEN"};
  EXPECT_EQ(crisp::env_value(env, "PATH"), "/a");
  EXPECT_EQ(crisp::env_value(env, "EMPTY"), "");
  EXPECT_EQ(crisp::env_value(env, "BROKEN"), std::nullopt);
  EXPECT_EQ(crisp::env_value(env, "PAT"), std::nullopt);
}

TEST(Passwd, RootAndNobody) {
  auto root = crisp::lookup_uid(0);
  ASSERT_TRUE(root);
  EXPECT_EQ(root->name, "root");
  EXPECT_EQ(root->home, "/root");
  EXPECT_FALSE(crisp::lookup_uid(4000000000u));
  // The metrics relay's user, by name.
  auto nobody = crisp::lookup_user("nobody");
  ASSERT_TRUE(nobody);
  EXPECT_EQ(nobody->first, 65534u);
  EXPECT_EQ(crisp::lookup_user("root"), std::make_pair(0u, 0u));
  EXPECT_FALSE(crisp::lookup_user("no-such-user-crisp"));
}

TEST(LogLevel, Names) {
  crisp::LogLevel l;
  EXPECT_TRUE(crisp::parse_log_level("warn", l));
  EXPECT_EQ(l, crisp::LogLevel::warn);
  EXPECT_FALSE(crisp::parse_log_level("verbose", l));
}

}  // namespace

namespace {

crisp::SlurmCgroup placed(const std::string& line) {
  auto lines = crisp::parse_proc_cgroup(line);
  EXPECT_EQ(lines.size(), 1u) << line;
  auto c = lines.empty() ? std::nullopt : crisp::slurm_cgroup_of(lines[0]);
  EXPECT_TRUE(c) << line;
  return c.value_or(crisp::SlurmCgroup{});
}

std::string target(const crisp::SlurmCgroup& c, crisp::SlurmLevel level) {
  return crisp::adoption_target(c, level, 7).value_or("none");
}

// Recorded on the dev clusters: Slurm 22.05 (bookworm), 24.11 (trixie) and 26.05 (sid),
// cgroup/v1, a task's /proc/self/cgroup.
TEST(Cgroups, V1TaskOfEachRelease) {
  for (const char* line : {"4:memory:/slurm_vm/uid_5/job_7/step_0/task_1", "5:memory:/slurm_trixie/uid_5/job_7/step_0/task_1",
                           "9:memory:/slurm_sid/uid_5/job_7/step_0/task_1"}) {
    crisp::SlurmCgroup c = placed(line);
    std::string node = crisp::parse_proc_cgroup(line)[0].path.substr(0, crisp::parse_proc_cgroup(line)[0].path.find("/uid_"));
    EXPECT_FALSE(c.v2);
    EXPECT_EQ(target(c, crisp::SlurmLevel::kStep), node + "/uid_5/job_7/step_0") << line;
    EXPECT_EQ(target(c, crisp::SlurmLevel::kJob), node + "/uid_5/job_7") << line;
    EXPECT_EQ(target(c, crisp::SlurmLevel::kUser), node + "/uid_5") << line;
  }
  // slurmstepd itself, in the freezer's step directory; the batch step.
  EXPECT_EQ(target(placed("6:freezer:/slurm_vm/uid_5/job_7/step_0"), crisp::SlurmLevel::kStep), "/slurm_vm/uid_5/job_7/step_0");
  EXPECT_EQ(target(placed("3:cpuset:/slurm/uid_5/job_7/step_batch"), crisp::SlurmLevel::kJob), "/slurm/uid_5/job_7");
}

// cgroup/v2 as Slurm's cgroup_v2 plugin lays it out (src/plugins/cgroup/v2): 24.11 names the
// job's directory job_J; 26.05 by the job's unique id unless CgroupJobIdPaths=yes; a site's
// CgroupSlice; several slurmd on a node prefix the scope with the node's name.
TEST(Cgroups, V2TaskOfEachLayout) {
  struct Case { const char* line; const char* job; };
  for (Case k : {Case{"0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_1", "/system.slice/slurmstepd.scope/job_7"},
                 Case{"0::/system.slice/slurmstepd.scope/s5JDM92NCKF500/step_0/user/task_1", "/system.slice/slurmstepd.scope/s5JDM92NCKF500"},
                 Case{"0::/slurm.slice/slurm-jobs.slice/n1_slurmstepd.scope/job_7/step_batch/user/task_0", "/slurm.slice/slurm-jobs.slice/n1_slurmstepd.scope/job_7"}}) {
    crisp::SlurmCgroup c = placed(k.line);
    EXPECT_TRUE(c.v2);
    EXPECT_EQ(c.job, k.job);
    EXPECT_EQ(target(c, crisp::SlurmLevel::kStep), crisp::parse_proc_cgroup(k.line)[0].path) << "the task's own leaf";
    EXPECT_EQ(target(c, crisp::SlurmLevel::kJob), std::string(k.job) + "/crisp_job_7") << "crisp's leaf in the job's";
    EXPECT_EQ(target(c, crisp::SlurmLevel::kUser), "none") << "v2 has no user level";
  }
  // slurmstepd's own cgroup: its step is the directory above.
  EXPECT_EQ(placed("0::/system.slice/slurmstepd.scope/job_7/step_3/slurm").step, "/system.slice/slurmstepd.scope/job_7/step_3");
}

TEST(Cgroups, OutsideSlurmsTreeNothingIsSlurms) {
  for (const char* line : {"0::/", "0::/system.slice/slurmstepd.scope/system", "0::/system.slice/slurmd.service",
                           "4:memory:/k8s.io/abc", "4:memory:/slurm_vm/uid_5", "1:name=systemd:/init.scope",
                           "4:memory:/process_api/286079114080084441e3317568eb8276"}) {
    auto lines = crisp::parse_proc_cgroup(line);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_FALSE(crisp::slurm_cgroup_of(lines[0])) << line;
  }
  auto lines = crisp::parse_proc_cgroup("6:freezer:/slurm_vm/uid_5/job_7/step_0\n1:name=systemd:/init.scope\n0::/\n");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1].controllers, "name=systemd");
  EXPECT_EQ(lines[2].controllers, "") << "the v2 line";
  EXPECT_EQ(crisp::hierarchy_dir("memory"), "/sys/fs/cgroup/memory");
  EXPECT_EQ(crisp::hierarchy_dir("name=systemd"), "/sys/fs/cgroup/systemd");
  EXPECT_TRUE(crisp::adopt_container_processes(getpid(), crisp::SlurmLevel::kStep, 7).ok())
      << "outside Slurm's cgroups: nothing to do";
}

// What crispd empties when a named container goes: v1's job (or user) directories, v2's crisp leaf.
TEST(Cgroups, AdoptedDirectoriesOfAJobInEachLayout) {
  char tmpl[] = "/tmp/crisp-cgroups-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string root = tmpl;
  // A hybrid machine (v2 at unified/), as this one.
  for (const char* d : {"/memory/slurm_vm/uid_5/job_7", "/cpuset/slurm_vm/uid_5/job_8",
                        "/unified/system.slice/slurmstepd.scope/s5JDM92NCKF500/crisp_job_7",
                        "/unified/system.slice/slurmstepd.scope/job_8/crisp_job_8"})
    ASSERT_EQ(std::system(("mkdir -p " + root + d).c_str()), 0);
  auto dirs = crisp::slurm_cgroup_dirs(5, 7, root);
  std::sort(dirs.begin(), dirs.end());
  EXPECT_EQ(dirs, (std::vector<std::string>{root + "/memory/slurm_vm/uid_5/job_7",
                                            root + "/unified/system.slice/slurmstepd.scope/s5JDM92NCKF500/crisp_job_7"}));
  EXPECT_EQ(crisp::slurm_cgroup_dirs(5, 0, root).size(), 2u) << "the user's: v1's uid_5 in memory and cpuset";
  EXPECT_EQ(crisp::unified_dir(root), root + "/unified");
  std::ofstream(root + "/cgroup.controllers") << "cpu memory\n";
  EXPECT_EQ(crisp::unified_dir(root), root) << "a cgroup v2 machine";
  (void)!system(("rm -rf " + root).c_str());
}

}  // namespace
