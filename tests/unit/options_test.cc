#include "spank/options.h"

#include <gtest/gtest.h>

#include "spank/step_request.h"

namespace {

crisp::RawOptions raw_of(std::map<std::string, std::string> v) { return crisp::RawOptions{std::move(v)}; }
const crisp::PluginConfig kDefaults;

TEST(Options, NoImageMeansHostAndWarnsAboutTheRest) {
  auto r = crisp::validate_options(raw_of({{"MOUNTS", "/a"}, {"ENV", "X"}, {"REMAP_ROOT", "1"}}), kDefaults);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->active);
  ASSERT_EQ(r->warnings.size(), 3u);
  EXPECT_EQ(r->warnings[0], "--container-mounts is ignored without --container-image");
  EXPECT_EQ(r->warnings[2], "--container-remap-root is ignored without --container-image");
}

TEST(Options, FullSet) {
  auto r = crisp::validate_options(raw_of({{"IMAGE", "127.0.0.1:5000/busybox"},
                                           {"MOUNTS", "/data:/data:ro,tmpfs:/scratch,./in:/in"},
                                           {"WORKDIR", "/work"},
                                           {"ENV", "A,B"},
                                           {"NAME", "dev:create"},
                                           {"MOUNT_HOME", "1"},
                                           {"REMAP_ROOT", "1"},
                                           {"ENTRYPOINT", "1"},
                                           {"ENTRYPOINT_LOG", "1"},
                                           {"READONLY", "1"}}),
                                   kDefaults);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->active);
  EXPECT_EQ(r->image->canonical(), "127.0.0.1:5000/busybox:latest");
  ASSERT_EQ(r->mounts.size(), 3u);
  EXPECT_TRUE(r->mounts[0].readonly);
  EXPECT_TRUE(r->mounts[1].tmpfs);
  EXPECT_EQ(r->mounts[2].source, "./in");
  EXPECT_EQ(r->workdir, "/work");
  EXPECT_EQ(r->env_names, (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(r->name, "dev");
  EXPECT_EQ(r->mode, crisp::NameMode::kCreate);
  EXPECT_TRUE(r->mount_home && r->remap_root && r->entrypoint && r->entrypoint_log && r->readonly);
}

TEST(Options, AnImageFileIsResolvedAgainstTheJobsDirectory) {
  auto r = crisp::validate_options(raw_of({{"IMAGE", "./images/x.sqsh"}}), kDefaults);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->active);
  EXPECT_FALSE(r->image.has_value());
  EXPECT_EQ(r->image_file, "./images/x.sqsh");
  crisp::StepContext step;
  step.workdir = "/home/u/job";
  auto req = crisp::build_create_request(step, *r, kDefaults);
  EXPECT_EQ(req.image_file(), "/home/u/job/images/x.sqsh");
  EXPECT_EQ(req.image(), "");
  auto abs = crisp::validate_options(raw_of({{"IMAGE", "/lustre/images/pytorch.sqsh"}}), kDefaults);
  ASSERT_TRUE(abs.ok());
  EXPECT_EQ(crisp::build_create_request(step, *abs, kDefaults).image_file(), "/lustre/images/pytorch.sqsh");
  auto dir = crisp::validate_option("IMAGE", "/lustre/images/");
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error(), "invalid image file '/lustre/images/': it names a directory, not a squashfs file");
}

TEST(Options, NameAloneIsEnoughToAttach) {
  auto r = crisp::validate_options(raw_of({{"NAME", "dev:exec"}}), kDefaults);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->active);
  EXPECT_FALSE(r->image.has_value());
  EXPECT_EQ(r->mode, crisp::NameMode::kExec);
}

TEST(Options, ConflictsAndSavePaths) {
  auto both = crisp::validate_options(raw_of({{"IMAGE", "busybox"}, {"WRITABLE", "1"}, {"READONLY", "1"}}), kDefaults);
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.error(), "--container-writable and --container-readonly conflict: give one of them");
  auto log_alone = crisp::validate_options(raw_of({{"IMAGE", "busybox"}, {"ENTRYPOINT_LOG", "1"}}), kDefaults);
  ASSERT_FALSE(log_alone.ok());
  EXPECT_NE(log_alone.error().find("--container-entrypoint-log needs the entrypoint"), std::string::npos);
  crisp::PluginConfig entry_on;
  entry_on.execute_entrypoint = true;
  EXPECT_TRUE(crisp::validate_options(raw_of({{"IMAGE", "busybox"}, {"ENTRYPOINT_LOG", "1"}}), entry_on).ok());
  auto off = crisp::validate_options(raw_of({{"IMAGE", "busybox"}, {"ENTRYPOINT", "0"}}), entry_on);
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->entrypoint);
  EXPECT_TRUE(crisp::validate_option("SAVE", "/tmp/x.sqsh").ok());
  EXPECT_TRUE(crisp::validate_option("SAVE", "./x.sqsh").ok());
  auto dir = crisp::validate_option("SAVE", "/tmp/");
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error(), "invalid --container-save '/tmp/': it must name a file, not a directory");
  auto saved = crisp::validate_options(raw_of({{"IMAGE", "busybox"}, {"SAVE", "out.sqsh"}}), kDefaults);
  ASSERT_TRUE(saved.ok());
  EXPECT_EQ(saved->save_path, "out.sqsh");
}

// The same value whether the option's callback or the prolog (SPANK_ variables) reads it.
TEST(Options, ValueIsTheArgumentOrTheFlagsValue) {
  auto def = [](const std::string& name) {
    for (const crisp::OptionDef& d : crisp::option_defs())
      if (d.name == name) return d;
    ADD_FAILURE() << "no --" << name;
    return crisp::option_defs().front();
  };
  EXPECT_EQ(crisp::option_value(def("container-image"), "ubuntu:24.04"), "ubuntu:24.04");
  EXPECT_EQ(crisp::option_value(def("container-image"), ""), "");
  EXPECT_EQ(crisp::option_value(def("container-mount-home"), ""), "1");
  EXPECT_EQ(crisp::option_value(def("no-container-mount-home"), "ignored"), "0");
}

TEST(Options, EachOptionValidatedAlone) {
  EXPECT_FALSE(crisp::validate_option("IMAGE", "Bad:Image:").ok());
  EXPECT_FALSE(crisp::validate_option("MOUNTS", "rel:/x").ok());
  EXPECT_FALSE(crisp::validate_option("MOUNTS", "tmpfs").ok());
  EXPECT_TRUE(crisp::validate_option("WORKDIR", "relative").ok()) << "inside the container, from its root";
  EXPECT_FALSE(crisp::validate_option("WORKDIR", "").ok());
  EXPECT_FALSE(crisp::validate_option("ENV", "A-B").ok());
  // std::string, not const char*: a temporary's c_str() would dangle (ASan found it).
  for (const std::string& bad : std::vector<std::string>{"", ":auto", "a:bogus", "-x", "a/b", std::string(64, 'n')})
    EXPECT_FALSE(crisp::validate_option("NAME", bad).ok()) << bad;
  EXPECT_TRUE(crisp::validate_option("NAME", "my.container_1-a:no_exec").ok());
  EXPECT_TRUE(crisp::validate_option("WORKDIR", "/tmp").ok());
}

TEST(Options, EnvironmentFillsWhatTheCommandLineLeaves) {
  std::map<std::string, std::string> env = {{"PYXIS_CONTAINER_IMAGE", "pyxis/image"},
                                            {"PYXIS_CONTAINER_WORKDIR", "/from-pyxis"},
                                            {"CRISP_CONTAINER_WORKDIR", "/from-crisp"},
                                            {"PYXIS_CONTAINER_REMAP_ROOT", "true"},
                                            {"PYXIS_CONTAINER_ENV", "X"}};
  auto lookup = [&](const std::string& n) -> std::optional<std::string> {
    auto it = env.find(n);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  crisp::RawOptions raw = raw_of({{"IMAGE", "cli/image"}});
  ASSERT_TRUE(crisp::apply_environment(raw, lookup).ok());
  EXPECT_EQ(raw.values["IMAGE"], "cli/image");  // the command line wins
  EXPECT_EQ(raw.values["WORKDIR"], "/from-crisp");
  EXPECT_EQ(raw.values["REMAP_ROOT"], "1");
  EXPECT_EQ(raw.values["ENV"], "X");
  env["PYXIS_CONTAINER_WRITABLE"] = "maybe";
  crisp::RawOptions raw2;
  auto bad = crisp::apply_environment(raw2, lookup);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "PYXIS_CONTAINER_WRITABLE='maybe' must be 1 or 0");
  env.erase("PYXIS_CONTAINER_WRITABLE");
  env["PYXIS_CONTAINER_MOUNTS"] = "relative";
  crisp::RawOptions raw3;
  auto bad_mount = crisp::apply_environment(raw3, lookup);
  ASSERT_FALSE(bad_mount.ok());
  EXPECT_NE(bad_mount.error().find("(from PYXIS_CONTAINER_MOUNTS)"), std::string::npos);
}

TEST(Options, WritableAndReadonlyFromTheEnvironmentYieldToTheCommandLine) {
  auto readonly_with = [](std::map<std::string, std::string> cli, std::map<std::string, std::string> env) {
    crisp::RawOptions raw = raw_of({{"IMAGE", "busybox"}});
    for (auto& [k, v] : cli) raw.values[k] = v;
    auto lookup = [&](const std::string& n) -> std::optional<std::string> {
      auto it = env.find(n);
      return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    EXPECT_TRUE(crisp::apply_environment(raw, lookup).ok());
    auto opts = crisp::validate_options(raw, kDefaults);
    EXPECT_TRUE(opts.ok()) << opts.error();
    return opts.ok() && opts->readonly;
  };
  EXPECT_TRUE(readonly_with({}, {{"PYXIS_CONTAINER_WRITABLE", "0"}}));
  EXPECT_FALSE(readonly_with({}, {{"PYXIS_CONTAINER_WRITABLE", "1"}}));
  EXPECT_TRUE(readonly_with({}, {{"PYXIS_CONTAINER_READONLY", "1"}}));
  EXPECT_FALSE(readonly_with({}, {{"PYXIS_CONTAINER_READONLY", "0"}}));
  EXPECT_TRUE(readonly_with({{"READONLY", "1"}}, {{"PYXIS_CONTAINER_WRITABLE", "1"}}));
  EXPECT_TRUE(readonly_with({{"READONLY", "1"}}, {{"PYXIS_CONTAINER_READONLY", "0"}}));
  EXPECT_FALSE(readonly_with({{"WRITABLE", "1"}}, {{"PYXIS_CONTAINER_READONLY", "1"}}));
}

// Pyxis 0.24's --container-unshare: its words for a bad list, its variable when the option is absent.
TEST(Options, UnshareListsNamespacesAndRefusesUnknownOnes) {
  auto unshare = [](const std::string& v) {
    auto o = crisp::validate_options(raw_of({{"IMAGE", "busybox"}, {"UNSHARE", v}}), kDefaults);
    return o.ok() ? std::to_string(o->unshare) : o.error();
  };
  EXPECT_EQ(unshare("net"), "1");
  EXPECT_EQ(unshare("net,ipc,uts"), "7");
  EXPECT_EQ(unshare("uts,uts"), "4");
  EXPECT_NE(unshare("foo").find("unknown namespace 'foo'"), std::string::npos);
  EXPECT_NE(unshare("net,foo").find("unknown namespace 'foo'"), std::string::npos);
  EXPECT_NE(unshare("net,,ipc").find("empty namespace argument"), std::string::npos);
  EXPECT_FALSE(crisp::validate_option("UNSHARE", "pid").ok()) << "checked alone, before the allocation";

  crisp::RawOptions raw = raw_of({{"IMAGE", "busybox"}});
  auto lookup = [](const std::string& n) -> std::optional<std::string> {
    return n == "PYXIS_CONTAINER_UNSHARE" ? std::optional<std::string>("ipc") : std::nullopt;
  };
  ASSERT_TRUE(crisp::apply_environment(raw, lookup).ok());
  auto from_env = crisp::validate_options(raw, kDefaults);
  ASSERT_TRUE(from_env.ok());
  EXPECT_EQ(from_env->unshare, crisp::kUnshareIpc);
  EXPECT_EQ(crisp::build_create_request({}, *from_env, kDefaults).unshare(), crisp::kUnshareIpc);
  raw = raw_of({{"IMAGE", "busybox"}, {"UNSHARE", "net"}});
  ASSERT_TRUE(crisp::apply_environment(raw, lookup).ok());
  EXPECT_EQ(crisp::validate_options(raw, kDefaults)->unshare, crisp::kUnshareNet) << "the command line wins";
}

TEST(PluginArgs, KnownKeysAndErrors) {
  auto ok = crisp::parse_plugin_args({"socket=/run/x.sock", "timeout=60", "execute_entrypoint=1",
                                      "container_scope=global", "sbatch_support=0", "mount_workdir=no"});
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->socket, "/run/x.sock");
  EXPECT_EQ(ok->timeout_s, 60);
  EXPECT_TRUE(ok->execute_entrypoint);
  EXPECT_TRUE(ok->global_scope);
  EXPECT_FALSE(ok->sbatch_support);
  EXPECT_FALSE(ok->mount_workdir);
  auto def = crisp::parse_plugin_args({});
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->socket, "/run/crisp/crispd.sock");
  EXPECT_TRUE(def->sbatch_support);
  EXPECT_TRUE(def->global_scope) << "Pyxis's default";
  for (std::vector<std::string> bad :
       {std::vector<std::string>{"bogus=1"}, {"timeout=0"}, {"timeout=x"}, {"socket=rel"}, {"socket"},
        {"container_scope=node"}, {"execute_entrypoint=2"}, {"runtime_path=/usr/bin/enroot"}})
    EXPECT_FALSE(crisp::parse_plugin_args(bad).ok()) << bad[0];
  EXPECT_NE(crisp::parse_plugin_args({"bogus=1"}).error().find("unknown plugstack.conf argument 'bogus'"),
            std::string::npos);
}

TEST(StepRequest, CarriesIdentityImageAndMounts) {
  auto opts = crisp::validate_options(
      raw_of({{"IMAGE", "busybox:1.36"}, {"MOUNTS", "/scratch:/s:ro+rslave,./data:/data,tmpfs:/t"},
              {"NAME", "keep"}}),
      kDefaults);
  ASSERT_TRUE(opts.ok());
  crisp::StepContext step{42, 3, 1000, 1000, {1000, 27}, "alice", "/home/alice/run", 4242, "", "0,2", {}};
  auto req = crisp::build_create_request(step, *opts, kDefaults);
  EXPECT_EQ(req.job_id(), 42u);
  EXPECT_EQ(req.step_id(), 3u);
  EXPECT_EQ(req.uid(), 1000u);
  EXPECT_EQ(req.supplementary_gids_size(), 2);
  EXPECT_EQ(req.image(), "docker.io/library/busybox:1.36");
  ASSERT_EQ(req.mounts_size(), 3);
  EXPECT_EQ(req.mounts(0).target(), "/s");
  EXPECT_TRUE(req.mounts(0).readonly());
  EXPECT_EQ(req.mounts(0).propagation(), "rslave");
  EXPECT_EQ(req.mounts(1).source(), "/home/alice/run/./data");
  EXPECT_TRUE(req.mounts(2).tmpfs());
  EXPECT_EQ(req.job_workdir(), "/home/alice/run");
  EXPECT_EQ(req.stepd_pid(), 4242);
  EXPECT_EQ(req.name(), "keep");
  EXPECT_EQ(req.gpus(), "0,2");
  EXPECT_EQ(req.name_mode(), crisp::v1::NAME_AUTO);
  EXPECT_TRUE(req.global_scope());
  crisp::PluginConfig no_workdir;
  no_workdir.mount_workdir = false;
  no_workdir.global_scope = false;
  auto req2 = crisp::build_create_request(step, *opts, no_workdir);
  EXPECT_EQ(req2.job_workdir(), "");
  EXPECT_FALSE(req2.global_scope());
}

TEST(StepRequest, CarriesTheJobsEnvironmentUpToItsBound) {
  auto opts = crisp::validate_options(raw_of({{"IMAGE", "busybox"}}), kDefaults);
  ASSERT_TRUE(opts.ok());
  crisp::StepContext step;
  step.env = {"USER=alice", "HOME=/home/alice"};
  auto req = crisp::build_create_request(step, *opts, kDefaults);
  EXPECT_EQ(std::vector<std::string>(req.job_env().begin(), req.job_env().end()), step.env);
  step.env.assign(3, "BIG=" + std::string(crisp::kMaxJobEnvBytes / 2, 'x'));
  step.env.push_back("USER=alice");
  auto cut = crisp::build_create_request(step, *opts, kDefaults);
  ASSERT_EQ(cut.job_env_size(), 2) << "cut, not failed";
  EXPECT_EQ(cut.job_env(1), "USER=alice") << "a small variable after a big one is kept";
}

TEST(StepRequest, CarriesHomeRemapAndTheEntrypointsVariables) {
  auto opts = crisp::validate_options(
      raw_of({{"IMAGE", "busybox"}, {"ENV", "DOCKER_TLS_VERIFY,UNSET"}, {"REMAP_ROOT", "1"}, {"MOUNT_HOME", "1"}}),
      kDefaults);
  ASSERT_TRUE(opts.ok());
  crisp::StepContext step;
  step.env = {"HOME=/tmp", "DOCKER_TLS_VERIFY=1", "OTHER=x"};
  auto req = crisp::build_create_request(step, *opts, kDefaults);
  EXPECT_EQ(req.home(), "/tmp");
  EXPECT_TRUE(req.remap_root());
  EXPECT_TRUE(req.mount_home());
  ASSERT_EQ(req.entrypoint_env_size(), 1) << "only the named variables the job sets";
  EXPECT_EQ(req.entrypoint_env(0), "DOCKER_TLS_VERIFY=1");
  step.env = {"HOME=relative"};
  EXPECT_EQ(crisp::build_create_request(step, *opts, kDefaults).home(), "");
}

TEST(StepRequest, WorkdirFromEnv) {
  EXPECT_EQ(crisp::job_workdir_from_env({"A=1", "PWD=/home/u/x"}), "/home/u/x");
  EXPECT_EQ(crisp::job_workdir_from_env({"PWD=relative"}), "");
  EXPECT_EQ(crisp::job_workdir_from_env({}), "");
}

}  // namespace
