#include "common/env.h"

#include <gtest/gtest.h>

#include <algorithm>

using crisp::EnvEdit;
using crisp::merge_env;

namespace {

std::optional<std::optional<std::string>> edit_for(const std::vector<EnvEdit>& edits, const std::string& name) {
  for (const auto& e : edits)
    if (e.name == name) return e.value;
  return std::nullopt;
}

bool unset(const std::vector<EnvEdit>& edits, const std::string& name) {
  auto e = edit_for(edits, name);
  return e.has_value() && !e->has_value();
}

TEST(Env, ImageWinsAndPathComesFromImage) {
  auto edits = merge_env({"PATH=/opt/conda/bin:/usr/bin", "LANG=C.UTF-8", "HOME=/root"},
                         {"PATH=/home/u/bin:/usr/bin", "LANG=en_US", "SLURM_PROCID=3", "HOME=/home/u"}, {});
  EXPECT_EQ(edit_for(edits, "PATH"), std::optional<std::string>("/opt/conda/bin:/usr/bin"));
  EXPECT_EQ(edit_for(edits, "LANG"), std::optional<std::string>("C.UTF-8"));
  EXPECT_FALSE(edit_for(edits, "SLURM_PROCID").has_value()) << "job variables stay as they are";
}

TEST(Env, AnImageCannotSetSlurmsOrPmixsVariables) {
  auto edits = merge_env({"SLURM_JOB_ID=1", "PMIX_SERVER_URI=tcp://evil", "PMI_FD=9", "SLURM_NEW=x", "LANG=C"},
                         {"SLURM_JOB_ID=42", "PMIX_SERVER_URI=unix:/run/pmix"}, {});
  for (const char* name : {"SLURM_JOB_ID", "PMIX_SERVER_URI", "PMI_FD", "SLURM_NEW"})
    EXPECT_FALSE(edit_for(edits, name).has_value()) << name << " stays the job's";
  EXPECT_EQ(edit_for(edits, "LANG"), std::optional<std::string>("C"));
}

TEST(Env, ContainerEnvNamesKeepTheJobValue) {
  auto edits = merge_env({"LANG=C.UTF-8", "PATH=/img"}, {"LANG=en_US", "PATH=/host"}, {"LANG", "PATH"});
  EXPECT_FALSE(edit_for(edits, "LANG").has_value());
  EXPECT_FALSE(edit_for(edits, "PATH").has_value());
}

TEST(Env, KeptNameMissingFromJobFallsBackToImage) {
  auto edits = merge_env({"FOO=img"}, {}, {"FOO"});
  EXPECT_EQ(edit_for(edits, "FOO"), std::optional<std::string>("img"));
}

TEST(Env, HostLibraryPathsAreDropped) {
  auto edits = merge_env({}, {"LD_LIBRARY_PATH=/host/lib", "LD_PRELOAD=/x.so", "PATH=/usr/bin"}, {});
  EXPECT_TRUE(unset(edits, "LD_LIBRARY_PATH"));
  EXPECT_TRUE(unset(edits, "LD_PRELOAD"));
  EXPECT_EQ(edit_for(edits, "PATH"), std::optional<std::string>(std::string(crisp::kDefaultPath)))
      << "an image without PATH gets the default, not the host's";
}

TEST(Env, TheHostLocaleStaysOutUnlessNamed) {
  std::vector<std::string> job = {"LANG=en_US.UTF-8", "LANGUAGE=en_US", "LC_ALL=en_US.UTF-8", "LC_TIME=C"};
  auto edits = merge_env({}, job, {});
  for (const char* name : {"LANG", "LANGUAGE", "LC_ALL"}) EXPECT_TRUE(unset(edits, name)) << name;
  EXPECT_FALSE(edit_for(edits, "LC_TIME").has_value()) << "other LC_ variables pass, as with Pyxis";
  auto named = merge_env({}, job, {"LANG"});
  EXPECT_FALSE(edit_for(named, "LANG").has_value()) << "named in --container-env: the job's value stays";
  EXPECT_TRUE(unset(named, "LC_ALL"));
}

TEST(Env, EachTaskKeepsItsOwnGpusInTheContainersNumbering) {
  // Under ConstrainDevices Slurm numbers the step's GPUs 0..n-1 already.
  std::vector<std::string> step = {"CUDA_VISIBLE_DEVICES=0,1", "GPU_DEVICE_ORDINAL=0,1"};
  auto t1 = crisp::task_gpu_env(step, {"CUDA_VISIBLE_DEVICES=1", "GPU_DEVICE_ORDINAL=1"}, 2);
  EXPECT_EQ(t1, (std::vector<EnvEdit>{{"CUDA_VISIBLE_DEVICES", "1"}, {"GPU_DEVICE_ORDINAL", "1"}}));
  // Without it, gres indices: the step holds 2 and 5, the task 5, which is 1 inside.
  auto global = crisp::task_gpu_env({"CUDA_VISIBLE_DEVICES=2,5"}, {"CUDA_VISIBLE_DEVICES=5"}, 2);
  EXPECT_EQ(global, (std::vector<EnvEdit>{{"CUDA_VISIBLE_DEVICES", "1"}}));
  auto all = crisp::task_gpu_env({"CUDA_VISIBLE_DEVICES=2,5"}, {"CUDA_VISIBLE_DEVICES=2,5"}, 2);
  EXPECT_EQ(all, (std::vector<EnvEdit>{{"CUDA_VISIBLE_DEVICES", "0,1"}}));
  EXPECT_TRUE(crisp::task_gpu_env({"CUDA_VISIBLE_DEVICES=2,5"}, {"CUDA_VISIBLE_DEVICES=7"}, 2).empty())
      << "not one of the step's: left as it is";
  EXPECT_TRUE(crisp::task_gpu_env({}, {"CUDA_VISIBLE_DEVICES=0"}, 2).empty());
  EXPECT_TRUE(crisp::task_gpu_env({"CUDA_VISIBLE_DEVICES=0"}, {}, 1).empty());
  // As Slurm 22.05 sets it under ConstrainDevices with --gpus-per-task=1: "0" in every task.
  std::vector<std::string> task1 = {"CUDA_VISIBLE_DEVICES=0", "GPU_DEVICE_ORDINAL=0", "SLURMD_TRES_BIND=gpu:per_task:1",
                                    "SLURM_LOCALID=1"};
  EXPECT_EQ(crisp::task_gpu_env(step, task1, 2),
            (std::vector<EnvEdit>{{"CUDA_VISIBLE_DEVICES", "1"}, {"GPU_DEVICE_ORDINAL", "1"}}))
      << "the binding says which of the step's GPUs is the task's";
}

TEST(Env, SlurmsGpuBindingForEachTask) {
  using V = std::vector<unsigned>;
  EXPECT_EQ(crisp::bound_gpus("gpu:per_task:1", 1, 2), V{1});
  EXPECT_EQ(crisp::bound_gpus("gpu:per_task:2", 1, 4), (V{2, 3}));
  EXPECT_EQ(crisp::bound_gpus("gpu:verbose,per_task:1", 0, 2), V{0});
  EXPECT_EQ(crisp::bound_gpus("gpu:map_gpu:1,0", 0, 2), V{1});
  EXPECT_EQ(crisp::bound_gpus("gpu:map_gpu:0*2,1*2", 3, 2), V{1});
  EXPECT_EQ(crisp::bound_gpus("gpu:mask_gpu:0x3,0xc", 1, 4), (V{2, 3}));
  // Slurm 24.11 and 26.05: "gres/gpu:", --tres-bind's own names, several TRES joined by '+'.
  EXPECT_EQ(crisp::bound_gpus("gres/gpu:per_task:1", 1, 2), V{1});
  EXPECT_EQ(crisp::bound_gpus("gres/gpu:verbose,map_gpu:1,0", 0, 2), V{1});
  EXPECT_EQ(crisp::bound_gpus("gres/gpu:map:1,0", 1, 2), V{0});
  EXPECT_EQ(crisp::bound_gpus("gres/gpu:mask:0x2,0x1", 0, 2), V{1});
  EXPECT_EQ(crisp::bound_gpus("gres/nic:closest+gres/gpu:map:1,0", 0, 2), V{1});
  for (const char* none : {"gpu:closest", "gpu:single:1", "gpu:none", "gpu:per_task:x", "gpu:map_gpu:", "gpu:map_gpu:5",
                           "cpu:per_task:1", "", "gpu:map_gpu:99999999999", "gpu:per_task:0", "gres/gpu:closest",
                           "gres/nic:map:1", "gres/gpux:map:1", "+", "gres/"})
    EXPECT_FALSE(crisp::bound_gpus(none, 1, 2).has_value()) << none;
  EXPECT_FALSE(crisp::bound_gpus("gpu:per_task:1", 0, 0).has_value());
}

TEST(Env, ImageLdLibraryPathIsSet) {
  auto edits = merge_env({"LD_LIBRARY_PATH=/usr/local/cuda/lib64"}, {"LD_LIBRARY_PATH=/host"}, {});
  EXPECT_EQ(edit_for(edits, "LD_LIBRARY_PATH"), std::optional<std::string>("/usr/local/cuda/lib64"));
}

TEST(Env, ValueWithEqualsSign) {
  auto edits = merge_env({"OPTS=a=b=c"}, {}, {});
  EXPECT_EQ(edit_for(edits, "OPTS"), std::optional<std::string>("a=b=c"));
}

TEST(Env, ParseNames) {
  auto ok = crisp::parse_env_names("A,B_2,_C");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, (std::vector<std::string>{"A", "B_2", "_C"}));
  for (const char* bad : {"", "A,", "1A", "A-B", "A B"}) EXPECT_FALSE(crisp::parse_env_names(bad).ok()) << bad;
}

}  // namespace

namespace {

TEST(PytorchEnv, OnlyForPytorchImagesAndNeverOverTheImage) {
  std::vector<std::string> job = {"SLURM_PROCID=3", "SLURM_LOCALID=1", "SLURM_NTASKS=4",
                                  "SLURM_STEP_NODELIST=gpu[07-09],cpu1", "SLURM_JOB_ID=20000"};
  EXPECT_TRUE(crisp::pytorch_env({"PATH=/bin"}, job).empty());
  auto edits = crisp::pytorch_env({"PYTORCH_VERSION=2.3.0", "MASTER_PORT=29500"}, job);
  std::vector<crisp::EnvEdit> want = {{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "4"},
                                      {"MASTER_ADDR", "gpu07"}};
  EXPECT_EQ(edits, want);
  auto with_port = crisp::pytorch_env({"PYTORCH_VERSION=2.3.0"}, job);
  ASSERT_EQ(with_port.size(), 5u);
  EXPECT_EQ(with_port[4], (crisp::EnvEdit{"MASTER_PORT", std::to_string(49152 + 20000 % 16384)}));
}

TEST(FirstHost, SlurmHostLists) {
  EXPECT_EQ(crisp::first_host("node1"), "node1");
  EXPECT_EQ(crisp::first_host("node1,node2"), "node1");
  EXPECT_EQ(crisp::first_host("gpu[007-009,012]"), "gpu007");
  EXPECT_EQ(crisp::first_host("rack[1-2]-n[3-4]"), "rack1-n3");
  EXPECT_EQ(crisp::first_host("a[5]b,c"), "a5b");
}

}  // namespace
