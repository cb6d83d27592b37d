#include "spank/options.h"

#include <gtest/gtest.h>

#include "spank/step_request.h"

namespace {

TEST(Options, NoImageMeansHostAndWarnsAboutTheRest) {
  crisp::RawOptions raw;
  raw.mounts = "/a";
  raw.env = "X";
  auto r = crisp::validate_options(raw);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->active);
  ASSERT_EQ(r->warnings.size(), 2u);
  EXPECT_EQ(r->warnings[0], "--container-mounts is ignored without --container-image");
}

TEST(Options, FullSet) {
  crisp::RawOptions raw{"127.0.0.1:5000/busybox", "/data:/data:ro", "/work", "A,B"};
  auto r = crisp::validate_options(raw);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->active);
  EXPECT_EQ(r->image.canonical(), "127.0.0.1:5000/busybox:latest");
  ASSERT_EQ(r->mounts.size(), 1u);
  EXPECT_TRUE(r->mounts[0].readonly);
  EXPECT_EQ(r->workdir, "/work");
  EXPECT_EQ(r->env_names, (std::vector<std::string>{"A", "B"}));
}

TEST(Options, EachOptionValidatedAlone) {
  EXPECT_FALSE(crisp::validate_option("container-image", "Bad:Image:").ok());
  EXPECT_FALSE(crisp::validate_option("container-mounts", "rel:/x").ok());
  EXPECT_FALSE(crisp::validate_option("container-workdir", "relative").ok());
  EXPECT_FALSE(crisp::validate_option("container-env", "A-B").ok());
  EXPECT_TRUE(crisp::validate_option("container-workdir", "/tmp").ok());
}

TEST(PluginArgs, KnownKeysAndErrors) {
  auto ok = crisp::parse_plugin_args({"socket=/run/x.sock", "timeout=60"});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->socket, "/run/x.sock");
  EXPECT_EQ(ok->timeout_s, 60);
  auto def = crisp::parse_plugin_args({});
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->socket, "/run/crisp/crispd.sock");
  for (std::vector<std::string> bad : {std::vector<std::string>{"bogus=1"}, {"timeout=0"}, {"timeout=x"},
                                       {"socket=rel"}, {"socket"}})
    EXPECT_FALSE(crisp::parse_plugin_args(bad).ok()) << bad[0];
  EXPECT_NE(crisp::parse_plugin_args({"bogus=1"}).error().find("unknown plugstack.conf argument 'bogus'"),
            std::string::npos);
}

TEST(StepRequest, CarriesIdentityImageAndMounts) {
  crisp::RawOptions raw{"busybox:1.36", "/scratch:/s:ro+rslave", std::nullopt, std::nullopt};
  auto opts = crisp::validate_options(raw);
  ASSERT_TRUE(opts.ok());
  crisp::StepContext step{42, 3, 1000, 1000, {1000, 27}, "alice", "/home/alice/run", 4242};
  auto req = crisp::build_create_request(step, *opts);
  EXPECT_EQ(req.job_id(), 42u);
  EXPECT_EQ(req.step_id(), 3u);
  EXPECT_EQ(req.uid(), 1000u);
  EXPECT_EQ(req.supplementary_gids_size(), 2);
  EXPECT_EQ(req.image(), "docker.io/library/busybox:1.36");
  ASSERT_EQ(req.mounts_size(), 1);
  EXPECT_EQ(req.mounts(0).target(), "/s");
  EXPECT_TRUE(req.mounts(0).readonly());
  EXPECT_EQ(req.mounts(0).propagation(), "rslave");
  EXPECT_EQ(req.job_workdir(), "/home/alice/run");
  EXPECT_EQ(req.stepd_pid(), 4242);
}

TEST(StepRequest, WorkdirFromEnv) {
  EXPECT_EQ(crisp::job_workdir_from_env({"A=1", "PWD=/home/u/x"}), "/home/u/x");
  EXPECT_EQ(crisp::job_workdir_from_env({"PWD=relative"}), "");
  EXPECT_EQ(crisp::job_workdir_from_env({}), "");
}

}  // namespace
