#include "agent/cri/spec_builder.h"

#include <gtest/gtest.h>

#include "agent/cri/labels.h"
#include "common/slurm_ids.h"

namespace {

crisp::NodeSettings node{"node7", "/usr/libexec/crisp/crisp-holder"};

crisp::StepContainerInput input() {
  crisp::StepContainerInput in;
  in.job = {1234, 1000, "alice"};
  in.step_id = 0;
  in.gid = 100;
  in.groups = {100, 27};
  in.image = "127.0.0.1:5000/busybox:latest";
  crisp::v1::BindMount m;
  m.set_source("/data");
  m.set_target("/in");
  m.set_readonly(true);
  m.set_propagation("rslave");
  in.mounts.push_back(m);
  in.workdir = "/home/alice";
  in.workdir_source = "/run/crisp/tmpfs/1234.0/m0";
  in.stepd_pid = 999;
  return in;
}

TEST(SpecBuilder, SandboxUsesHostNamespacesAndNoHostname) {
  auto c = crisp::build_user_sandbox_config(1000, "alice", node);
  EXPECT_EQ(c.hostname(), "");
  EXPECT_EQ(c.metadata().name(), "user-1000");
  EXPECT_EQ(c.metadata().namespace_(), "slurm");
  const auto& ns = c.linux().security_context().namespace_options();
  EXPECT_EQ(ns.network(), crisp::cri::NODE);
  EXPECT_EQ(ns.pid(), crisp::cri::NODE);
  EXPECT_EQ(ns.ipc(), crisp::cri::NODE);
  EXPECT_EQ(c.labels().at(crisp::labels::kJob), "0") << "it outlives every job";
  EXPECT_EQ(c.labels().at(crisp::labels::kUid), "1000");
  EXPECT_EQ(c.log_directory(), crisp::kLogDirectory);
  EXPECT_EQ(c.labels().at(crisp::labels::kNode), "node7");
  EXPECT_EQ(c.labels().at(crisp::labels::kPodName), "user-1000");
  EXPECT_EQ(c.labels().at(crisp::labels::kPodNamespace), "slurm");
}

TEST(SpecBuilder, StepContainerRunsOnlyTheHolderAsTheUser) {
  auto c = crisp::build_step_container(input(), node);
  ASSERT_EQ(c.command_size(), 1);
  EXPECT_EQ(c.command(0), crisp::kHolderTarget);
  ASSERT_EQ(c.args_size(), 1);
  EXPECT_EQ(c.args(0), "999");
  const auto& sc = c.linux().security_context();
  EXPECT_EQ(sc.run_as_user().value(), 1000);
  EXPECT_EQ(sc.run_as_group().value(), 100);
  EXPECT_EQ(sc.supplemental_groups_size(), 2);
  EXPECT_TRUE(sc.no_new_privs());
  EXPECT_FALSE(sc.privileged());
  ASSERT_EQ(sc.capabilities().drop_capabilities_size(), 1);
  EXPECT_EQ(sc.capabilities().drop_capabilities(0), "ALL");
  EXPECT_EQ(sc.namespace_options().pid(), crisp::cri::NODE);
  EXPECT_EQ(c.labels().at(crisp::labels::kStep), "0");
  EXPECT_EQ(c.labels().at(crisp::labels::kPodName), "user-1000") << "the user's sandbox";
  EXPECT_EQ(c.labels().at(crisp::labels::kJob), "1234");
  EXPECT_EQ(c.labels().at(crisp::labels::kContainerName), "job-1234-step-0");
}

TEST(SpecBuilder, MountsHolderUserMountsAndWorkdir) {
  auto c = crisp::build_step_container(input(), node);
  ASSERT_EQ(c.mounts_size(), 4);
  EXPECT_EQ(c.mounts(0).host_path(), node.holder_path);
  EXPECT_TRUE(c.mounts(0).readonly());
  EXPECT_EQ(c.mounts(1).host_path(), "/data");
  EXPECT_EQ(c.mounts(1).container_path(), "/in");
  EXPECT_TRUE(c.mounts(1).readonly());
  EXPECT_EQ(c.mounts(1).propagation(), crisp::cri::PROPAGATION_HOST_TO_CONTAINER);
  EXPECT_EQ(c.mounts(2).container_path(), "/home/alice");
  EXPECT_FALSE(c.mounts(2).readonly());
  EXPECT_EQ(c.mounts(3).host_path(), "/dev/pts") << "srun --pty's terminal lives there";
}

TEST(SpecBuilder, UserMountOverWorkdirWins) {
  auto in = input();
  in.mounts[0].set_target("/home/alice");
  auto c = crisp::build_step_container(in, node);
  ASSERT_EQ(c.mounts_size(), 3);
  EXPECT_EQ(c.mounts(1).host_path(), "/data");
}

TEST(SpecBuilder, WorkdirThroughASymlinkIsMountedAtBothPaths) {
  auto in = input();
  in.workdir = "/data/home/alice";
  in.workdir_alias = "/home/alice";
  auto c = crisp::build_step_container(in, node);
  ASSERT_EQ(c.mounts_size(), 5);
  EXPECT_EQ(c.mounts(2).host_path(), "/run/crisp/tmpfs/1234.0/m0") << "the staged clone, never the user's path";
  EXPECT_EQ(c.mounts(2).container_path(), "/data/home/alice");
  EXPECT_EQ(c.mounts(3).host_path(), "/run/crisp/tmpfs/1234.0/m0");
  EXPECT_EQ(c.mounts(3).container_path(), "/home/alice");
}

TEST(SpecBuilder, SameWorkdirAndAliasMountOnce) {
  auto in = input();
  in.workdir_alias = in.workdir;
  EXPECT_EQ(crisp::build_step_container(in, node).mounts_size(), 4);
}

TEST(SpecBuilder, NamedContainerWithEntrypointAndReadonlyRoot) {
  auto in = input();
  in.name = "dev";
  in.readonly_rootfs = true;
  in.entrypoint = {"/entrypoint.sh", "--flag"};
  in.log_path = "1234.1000.dev.log";
  in.tmpfs = {{"/run/crisp/tmpfs/1234.1000.dev/0", "/scratch"}};
  in.tmpfs_root = "/run/crisp/tmpfs/1234.1000.dev";
  auto c = crisp::build_step_container(in, node);
  EXPECT_EQ(c.metadata().name(), "job-1234-named-dev");
  ASSERT_EQ(c.command_size(), 1);
  EXPECT_EQ(c.command(0), "/entrypoint.sh");
  ASSERT_EQ(c.args_size(), 3);
  EXPECT_EQ(c.args(1), crisp::kHolderTarget);
  EXPECT_EQ(c.args(2), "0") << "a named container's holder does not follow slurmstepd";
  EXPECT_EQ(c.log_path(), "1234.1000.dev.log");
  EXPECT_TRUE(c.linux().security_context().readonly_rootfs());
  EXPECT_EQ(c.labels().count(crisp::labels::kStep), 0u);
  EXPECT_EQ(c.labels().at(crisp::labels::kName), "dev");
  EXPECT_EQ(c.labels().at(crisp::labels::kEntrypoint), "true");
  EXPECT_EQ(c.labels().at(crisp::labels::kTmpfs), "/run/crisp/tmpfs/1234.1000.dev");
  bool scratch = false;
  for (const auto& m : c.mounts())
    if (m.container_path() == "/scratch" && m.host_path() == "/run/crisp/tmpfs/1234.1000.dev/0") scratch = true;
  EXPECT_TRUE(scratch);
  EXPECT_EQ(c.labels().at(crisp::labels::kPodName), "user-1000");
}

TEST(SpecBuilder, SpecialStepNames) {
  auto in = input();
  in.step_id = crisp::slurm::kBatchStep;
  auto c = crisp::build_step_container(in, node);
  EXPECT_EQ(c.metadata().name(), "job-1234-step-batch");
}

TEST(ImageInfo, ReadsConfig) {
  std::map<std::string, std::string> info = {
      {"info",
       R"({"imageSpec":{"config":{"Env":["PATH=/usr/bin","A=b=c"],"Entrypoint":["/e"],"Cmd":["sh"],"WorkingDir":"/w"}}})"}};
  auto c = crisp::parse_image_info(info);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->env, (std::vector<std::string>{"PATH=/usr/bin", "A=b=c"}));
  EXPECT_EQ(c->entrypoint, (std::vector<std::string>{"/e"}));
  EXPECT_EQ(c->cmd, (std::vector<std::string>{"sh"}));
  EXPECT_EQ(c->working_dir, "/w");
}

TEST(ImageInfo, ImageWithoutConfigIsEmpty) {
  auto c = crisp::parse_image_info({{"info", R"({"imageSpec":{}})"}});
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->env.empty());
}

TEST(ImageInfo, TheChainIdNamesTheLayersSnapshot) {
  auto c = crisp::parse_image_info({{"info", R"({"chainID":"sha256:abc","imageSpec":{}})"}});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->chain_id, "sha256:abc");
  EXPECT_TRUE(crisp::parse_image_info({{"info", R"({"chainID":7})"}})->chain_id.empty()) << "not a string";
}

TEST(ImageInfo, Malformed) {
  EXPECT_FALSE(crisp::parse_image_info({}).ok());
  EXPECT_FALSE(crisp::parse_image_info({{"info", "not json"}}).ok());
}

TEST(SandboxImage, FromTheRuntimesConfiguration) {
  auto image = crisp::parse_sandbox_image({{"config", R"({"sandboxImage":"127.0.0.1:5000/crisp/pause:latest"})"}});
  ASSERT_TRUE(image.ok()) << image.error();
  EXPECT_EQ(*image, "127.0.0.1:5000/crisp/pause:latest");
  EXPECT_FALSE(crisp::parse_sandbox_image({}).ok());
  EXPECT_FALSE(crisp::parse_sandbox_image({{"config", R"({"sandboxImage":""})"}}).ok());
  EXPECT_FALSE(crisp::parse_sandbox_image({{"config", "not json"}}).ok());
}

TEST(ContainerPid, ParsesAndRejects) {
  auto p = crisp::parse_container_pid({{"info", R"({"pid": 4321, "sandboxID": "x"})"}});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, 4321);
  EXPECT_FALSE(crisp::parse_container_pid({{"info", R"({"pid": 0})"}}).ok());
  EXPECT_FALSE(crisp::parse_container_pid({{"info", R"({})"}}).ok());
}

}  // namespace
