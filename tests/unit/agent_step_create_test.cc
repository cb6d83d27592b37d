// A step's creation and its undo against the fake CRI: StepCreator's phases, ContainerStarter
// (start slots, the root given to the user), StepDevices (GPUs confirmed with slurmctld),
// StepHost (host mounts undone), and the stale container of a step that a create removes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "agent/cri/labels.h"
#include "agent/steps/step_paths.h"
#include "tests/unit/fake_cri.h"

namespace crisp_test {
namespace {

std::vector<std::string> targets(const crisp::StepPlan& plan) {
  std::vector<std::string> out;
  for (const auto& [path, m] : plan.user_mounts) out.push_back(m.target());
  for (const auto& m : plan.tmpfs_mounts) out.push_back("tmpfs " + m.target());
  return out;
}

// umount:DST as enroot detaches it: the top mount at DST (runc makes the binds in order, then
// the tmpfs) and what was mounted under DST after it; what is under it from before shows again.
TEST(StepPaths, UmountTakesTheTopMountAtItsPathAndWhatWasMountedOnIt) {
  crisp::StepPlan plan;
  for (const char* t : {"/data/in", "/data", "/data/out", "/home/u", "/other"})
    plan.user_mounts.emplace_back(crisp::UserPath{}, crisp::bind_mount("/src", t, false));
  plan.tmpfs_mounts.push_back(crisp::tmpfs_mount("/data/tmp", ""));
  plan.tmpfs_mounts.push_back(crisp::tmpfs_mount("/other", ""));
  EXPECT_TRUE(crisp::unmount_planned(plan, "/data", 0, 0));
  EXPECT_EQ(targets(plan), (std::vector<std::string>{"/data/in", "/home/u", "/other", "tmpfs /other"}))
      << "/data/in was mounted before /data: it shows again";
  EXPECT_TRUE(crisp::unmount_planned(plan, "/other", 0, 0));
  EXPECT_EQ(targets(plan), (std::vector<std::string>{"/data/in", "/home/u", "/other"})) << "the tmpfs was on top";
  EXPECT_FALSE(crisp::unmount_planned(plan, "/home", 0, 0)) << "nothing is mounted at /home itself";
  EXPECT_FALSE(crisp::unmount_planned(plan, "/home/u", 2, 0)) << "only from the index given (the image's)";
  plan.pending_unmounts.push_back(crisp::bind_mount("", "/nothing", false));
  auto s = crisp::finish_unmounts(plan, 0, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("--container-mounts umount:/nothing: nothing crisp mounts is at /nothing"), std::string::npos);
  plan.pending_unmounts.back().set_nofail(true);
  EXPECT_TRUE(crisp::finish_unmounts(plan, 0, 0).ok()) << "nofail";
  plan.pending_unmounts = {crisp::bind_mount("", "/home/u/", false)};
  EXPECT_TRUE(crisp::finish_unmounts(plan, 0, 0).ok());
  EXPECT_EQ(targets(plan), (std::vector<std::string>{"/data/in", "/other"}));
}

TEST_F(AgentTest, TheRootFilesystemGoesToTheStepsUserOrTheCreateIsUndone) {
  auto s = settings();
  std::vector<crisp::RootfsRequest> asked;
  s.seams.give_rootfs = [&](const crisp::RootfsRequest& r) -> crisp::Status {
    asked.push_back(r);
    if (r.user.uid == 1002) return crisp::fail("cannot give the container's files to its user: mounting the overlay: EINVAL");
    if (r.user.uid == 1003) return crisp::fail(crisp::ErrorKind::kUnsupported, "the container's root is btrfs");
    return crisp::Ok{};
  };
  Node steps(*client_, *images_, s);
  auto r = step(40, 0, 1001);
  r.set_readonly_rootfs(true);
  ASSERT_TRUE(steps.create(r).ok());
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].user.uid, 1001u);
  EXPECT_EQ(asked[0].user.gid, 1001u);
  EXPECT_TRUE(asked[0].readonly);
  EXPECT_GT(asked[0].pid, 0) << "the holder's";
  auto failed = steps.create(step(41, 0, 1002));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error(), "cannot give the container's files to its user: mounting the overlay: EINVAL");
  EXPECT_TRUE(steps.create(step(42, 0, 1003)).ok()) << "a node that cannot idmap runs steps in root's files, as before";
  std::lock_guard l(fake_.mu);
  for (const auto& [id, c] : fake_.containers)
    EXPECT_NE(c.labels().at(crisp::labels::kJob), "41") << "the failed step's container is removed";
}

TEST_F(AgentTest, ConcurrentStartsWaitForATaskSlotAndAllSucceed) {
  fake_.start_delay = 50ms;
  EXPECT_EQ(create_at_once(7, 0, 12), 12);
  EXPECT_LE(fake_.most_starting, 4) << "the client was made with 4 task slots";
  EXPECT_GE(fake_.most_starting, 2) << "a job's steps still start side by side";
}

TEST_F(AgentTest, FailedStartLeavesNothingBehind) {
  fake_.fail_start = true;
  auto a = steps_->create(step(8, 0));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().find("cannot start the step's container"), std::string::npos) << a.error();
  EXPECT_NE(a.error().find("exec format error"), std::string::npos) << a.error();
  EXPECT_TRUE(fake_.containers.empty());
  ASSERT_TRUE(steps_->release_job(8).ok());  // the job's end, as the epilog sends it
  EXPECT_EQ(steps_->sweep(0s), 1u);  // the user's sandbox, idle
  EXPECT_TRUE(fake_.sandboxes.empty());
}

// What a create makes on the host before its container exists goes with a
// failure at any later phase: here a tmpfs and a staged clone of a user's
// source, with CreateContainer or StartContainer failing.
TEST_F(AgentTest, AFailedCreateLeavesNoHostMountBehind) {
  if (geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  for (bool at_create : {true, false}) {
    fake_.fail_create = at_create;
    fake_.fail_start = !at_create;
    auto req = step(11, at_create ? 0 : 1);
    auto* m = req.add_mounts();
    m->set_tmpfs(true);
    m->set_target("/scratch");
    auto* bind = req.add_mounts();
    bind->set_source("/tmp");
    bind->set_target("/data");
    auto r = steps_->create(req);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find(at_create ? "cannot create the step's container" : "cannot start the step's container"),
              std::string::npos)
        << r.error();
    EXPECT_TRUE(fake_.containers.empty());
    EXPECT_EQ(access((dir_ + "/tmpfs/11." + std::to_string(at_create ? 0 : 1)).c_str(), F_OK), -1)
        << "the step's tmpfs directory is gone";
    std::ifstream mounts("/proc/self/mounts");
    std::string all((std::istreambuf_iterator<char>(mounts)), std::istreambuf_iterator<char>());
    EXPECT_EQ(all.find(dir_ + "/tmpfs"), std::string::npos) << "and so is its mount";
  }
}

// SLURM_STEP_GPUS is in the job's environment: on Slurm 22.05 a step without
// GPUs keeps a value the user set. Only what slurmctld says the step has counts.
TEST_F(AgentTest, GpusNamedInTheEnvironmentNeedSlurmctldsWord) {
  auto with_gpus = [&](uint32_t stepid) {
    auto r = step(30, stepid);
    r.set_gpus("0-7");
    return r;
  };
  auto refused = steps_->create(with_gpus(0));
  ASSERT_FALSE(refused.ok()) << "no controller to ask: refused, not trusted";
  EXPECT_EQ(refused.error(), "crispd cannot confirm the step's GPUs: it has no Slurm controller to ask");
  auto s = settings();
  s.config.host.dirs = crisp::HostDirs(dir_ + "/tmpfs");
  std::vector<std::string> asked;
  s.seams.step_gpus = [&](uint32_t job, uint32_t stepid, const std::string& node) -> crisp::Result<crisp::StepGpus> {
    asked.push_back(std::to_string(job) + "." + std::to_string(stepid) + "@" + node);
    if (stepid == 2) return crisp::fail("Unable to contact slurm controller");
    return crisp::StepGpus{};  // the step holds no GPU
  };
  Node steps(*client_, *images_, s);
  auto none = steps.create(with_gpus(1));
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_EQ(none->device_env_size(), 0) << "no GPU, no CUDA_VISIBLE_DEVICES";
  auto down = steps.create(with_gpus(2));
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error(), "cannot confirm the step's GPUs with slurmctld (Unable to contact slurm controller): try again");
  EXPECT_EQ(asked, (std::vector<std::string>{"30.1@n1", "30.2@n1"}));
}

// An unnamed step's create lists no containers: it looks for a leftover of its step (a
// crispd restarted mid-step) only when its container's name is taken in the user's sandbox,
// and then removes the leftover and makes the step's container.
TEST_F(AgentTest, AStepsLeftoverIsLookedForOnlyWhenItsNameIsTaken) {
  auto first = steps_->create(step(90, 0));
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_EQ(fake_.container_lists, 0) << "a create whose name is free looks for no leftover";
  const std::string sandbox = sandbox_of(*first);
  cri::Container leftover;
  leftover.set_id("leftover");
  leftover.set_pod_sandbox_id(sandbox);
  leftover.mutable_metadata()->set_name("job-90-step-1");
  leftover.set_state(cri::CONTAINER_RUNNING);
  namespace labels = crisp::labels;
  for (const auto& [k, v] : crisp::Labels{{labels::kManaged, "true"}, {labels::kJob, "90"}, {labels::kStep, "1"},
                                          {labels::kUid, "1000"}, {labels::kContainerName, "job-90-step-1"}})
    (*leftover.mutable_labels())[k] = v;
  {
    std::lock_guard l(fake_.mu);
    fake_.containers[leftover.id()] = leftover;
  }
  auto second = steps_->create(step(90, 1));
  ASSERT_TRUE(second.ok()) << second.error();
  EXPECT_EQ(fake_.container_lists, 1) << "its name taken, the create looked for its step's leftover once";
  EXPECT_EQ(sandbox_of(*second), sandbox);
  std::lock_guard l(fake_.mu);
  EXPECT_EQ(fake_.containers.count("leftover"), 0u) << "the leftover is removed";
  EXPECT_EQ(fake_.containers.at(second->container_id()).metadata().name(), "job-90-step-1");
  EXPECT_EQ(fake_.containers.count(first->container_id()), 1u) << "the job's other step keeps its container";
}

}  // namespace
}  // namespace crisp_test

namespace crisp_test {
namespace {

void admin_file(const std::string& path, const std::string& text, mode_t mode = 0644) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
  ASSERT_EQ(chmod(path.c_str(), mode), 0);
}

// The site's files (agent/site/) reach the step: its mounts in the container's config, its
// variables (the job's ${NAME}, its partition's too) in the answer; a missing source fails it.
TEST_F(AgentTest, TheSitesMountsAndVariablesReachTheStep) {
  if (geteuid() != 0) GTEST_SKIP() << "the site's files must be root's";
  std::string site = dir_ + "/site";
  std::filesystem::create_directories(dir_ + "/data");
  admin_file(site + "/mounts.d/10.fstab", dir_ + "/data /opt/data none bind\n");
  admin_file(site + "/environ.d/10.env", "WHO=${USER}-x\n");
  admin_file(site + "/partitions/gpu/environ.d/10.env", "FABRIC=ib\n");
  auto s = settings();
  s.config.host.dirs = crisp::HostDirs(dir_ + "/tmpfs");
  s.config.site_dirs = {{site, false}};
  std::vector<uint32_t> asked;
  s.seams.job_partition = [&](uint32_t job) -> crisp::Result<std::string> {
    asked.push_back(job);
    return std::string("gpu");
  };
  Node steps(*client_, *images_, s);
  auto req = step(50, 0);
  req.add_job_env("USER=alice");
  auto r = steps.create(req);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(std::vector<std::string>(r->site_env().begin(), r->site_env().end()),
            (std::vector<std::string>{"WHO=alice-x", "FABRIC=ib"}));
  EXPECT_EQ(asked, std::vector<uint32_t>{50});
  {
    std::lock_guard l(fake_.mu);
    ASSERT_EQ(fake_.configs.size(), 1u);
    const auto& mounts = fake_.configs.begin()->second.mounts();
    auto data = std::find_if(mounts.begin(), mounts.end(), [](const auto& m) { return m.container_path() == "/opt/data"; });
    ASSERT_NE(data, mounts.end());
    EXPECT_TRUE(data->readonly());
  }
  ASSERT_TRUE(steps.release_step(50, 0).ok());
  EXPECT_EQ(access((dir_ + "/tmpfs/50.0").c_str(), F_OK), -1) << "the staged site mount goes with the step";
  admin_file(site + "/mounts.d/20.fstab", dir_ + "/absent /opt/absent none bind\n");
  auto missing = steps.create(step(51, 0));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), "the site's mount " + dir_ + "/absent (" + site +
                                 "/mounts.d/20.fstab:1) does not exist on this node: tell your admin");
}

// The site's hooks run in the started container: as the user (root-hooks.d as root, without
// the job's environment), their variables after the site's files'; one that fails fails the
// step, whose container is removed.
TEST_F(AgentTest, TheSitesHooksRunForEachStepAndAFailureLeavesNothing) {
  if (geteuid() != 0) GTEST_SKIP() << "the site's files must be root's";
  std::string site = dir_ + "/site";
  admin_file(site + "/environ.d/10.env", "FABRIC=eth\nKEEP=1\n");
  admin_file(site + "/hooks.d/10-fabric", "#!/bin/sh\n", 0755);
  admin_file(site + "/root-hooks.d/20-quota", "#!/bin/sh\n", 0700);
  auto s = settings();
  s.config.site_dirs = {{site, false}};
  std::vector<crisp::SiteHookRun> runs;
  bool fail = false;
  s.seams.run_hook = [&](const crisp::SiteHookRun& run) -> crisp::Result<crisp::SiteHookOutput> {
    runs.push_back(run);
    if (fail) return crisp::fail("the site's hook " + run.path + " failed (exit status 1): no license");
    return crisp::SiteHookOutput{run.as_user ? "FABRIC=ib\n" : "QUOTA=${USER}\n", ""};
  };
  Node steps(*client_, *images_, s);
  auto req = step(60, 0);
  req.add_job_env("USER=alice");
  req.add_job_env("SLURM_JOB_USER=root");  // a user's claim to be another
  req.add_job_env("LD_PRELOAD=/home/alice/evil.so");
  auto r = steps.create(req);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(std::vector<std::string>(r->site_env().begin(), r->site_env().end()),
            (std::vector<std::string>{"FABRIC=eth", "KEEP=1", "FABRIC=ib", "QUOTA=${USER}"}))
      << "the hooks' variables after the files' (so theirs win), as they wrote them";
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].path, site + "/hooks.d/10-fabric");
  ASSERT_TRUE(runs[0].as_user.has_value());
  EXPECT_EQ(runs[0].as_user->uid, req.uid());
  EXPECT_EQ(runs[0].holder_pid, r->holder_pid());
  EXPECT_EQ(runs[0].holder_start, r->holder_start_time()) << "the holder itself, never a pid's reuse";
  EXPECT_FALSE(runs[1].as_user.has_value()) << "root-hooks.d runs as root";
  auto has = [](const std::vector<std::string>& env, const std::string& kv) {
    return std::find(env.begin(), env.end(), kv) != env.end();
  };
  EXPECT_TRUE(has(runs[0].env, "USER=alice")) << "a user's hook sees the job's environment";
  EXPECT_FALSE(has(runs[1].env, "USER=alice")) << "a root hook does not: its values are the user's";
  EXPECT_TRUE(has(runs[1].env, "SLURM_JOB_ID=60"));
  EXPECT_FALSE(has(runs[0].env, "SLURM_JOB_USER=root")) << "crispd's identity variables are the only ones";
  EXPECT_FALSE(has(runs[0].env, "LD_PRELOAD=/home/alice/evil.so")) << "no user code in the admin's program";
  ASSERT_TRUE(steps.release_step(60, 0).ok());
  fail = true;
  auto failed = steps.create(step(61, 0));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error(), "the site's hook " + site + "/hooks.d/10-fabric failed (exit status 1): no license");
  std::lock_guard l(fake_.mu);
  EXPECT_EQ(fake_.containers.size(), 0u) << "the failed step's container is removed";
}

}  // namespace
}  // namespace crisp_test
