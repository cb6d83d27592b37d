#include <gtest/gtest.h>

#include "agent/devices/cdi.h"
#include "agent/devices/gres.h"

namespace {

// SLURM_STEP_GPUS is in the job's environment, which the user writes:
// "0-1000," repeated must not become millions of entries.
TEST(Gres, IndexListsAreBounded) {
  std::string forged;
  for (int i = 0; i < 1000; ++i) forged += "0-1000,";
  forged += "0";
  auto r = crisp::parse_index_list(forged);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("more than 1024 entries"), std::string::npos) << r.error();
  EXPECT_TRUE(crisp::parse_index_list("0-1023").ok());
  EXPECT_FALSE(crisp::parse_index_list("0-1024").ok());
  EXPECT_FALSE(crisp::expand_device_range("/dev/x[0-999][0-999]").ok()) << "a pattern that names a million files";
}

TEST(Gres, WhatSlurmctldSaysOfAnAllocation) {
  auto idx = [](const char* d) {
    auto r = crisp::gpu_indices_in_gres_detail(d);
    EXPECT_TRUE(r.ok()) << d;
    return r.ok() ? *r : std::vector<unsigned>{99};
  };
  EXPECT_EQ(idx("gpu:2(IDX:0-1)"), (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(idx("gpu:a100:2(IDX:0,2),nic:1(IDX:0)"), (std::vector<unsigned>{0, 2}));
  EXPECT_EQ(idx("nic:1(IDX:0),gpus_other:1(IDX:5)"), (std::vector<unsigned>{}));
  EXPECT_EQ(idx("gpu:0(IDX:N/A)"), (std::vector<unsigned>{}));
  EXPECT_EQ(idx(""), (std::vector<unsigned>{}));
  EXPECT_TRUE(crisp::tres_has_gpus("cpu=2,mem=1G,node=1,billing=2,gres/gpu=1"));
  EXPECT_TRUE(crisp::tres_has_gpus("cpu=2,gres/gpu:a100=2"));
  EXPECT_FALSE(crisp::tres_has_gpus("cpu=2,mem=1G,node=1"));
  EXPECT_FALSE(crisp::tres_has_gpus("gres/gpu=0,gres/gpumem=4G"));
  EXPECT_TRUE(crisp::tres_has_gpus("gres:gpu:1"));
  EXPECT_TRUE(crisp::tres_has_gpus("cpu:2;gres:gpu:a100:2"));
  EXPECT_FALSE(crisp::tres_has_gpus("gres:gpu:0"));
  EXPECT_FALSE(crisp::tres_has_gpus("gres:nic:1"));
}

TEST(Gres, RangesExpandInOrderWithPadding) {
  auto r = crisp::expand_device_range("/dev/nvidia[0-2,5]");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(*r, (std::vector<std::string>{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia5"}));
  auto padded = crisp::expand_device_range("/dev/dri/renderD[128-129]");
  ASSERT_TRUE(padded.ok());
  EXPECT_EQ(padded->back(), "/dev/dri/renderD129");
  EXPECT_EQ(*crisp::expand_device_range("gpu[08-10]"), (std::vector<std::string>{"gpu08", "gpu09", "gpu10"}));
  for (const char* bad : {"/dev/nvidia[0-", "/dev/nvidia[3-1]", "/dev/nvidia[a]", "/dev/nvidia[]"})
    EXPECT_FALSE(crisp::expand_device_range(bad).ok()) << bad;
}

TEST(Gres, DeviceFilesOfThisNodeInIndexOrder) {
  const char* conf =
      "# GPUs\n"
      "AutoDetect=off\n"
      "NodeName=gpu[01-04] Name=gpu Type=h200 File=/dev/nvidia[0-3]\n"
      "NodeName=big Name=gpu File=/dev/nvidia[0-7]\n"
      "NodeName=gpu[01-04] Name=gpu Type=l4 File=/dev/nvidia4   # a fifth, another type\n"
      "Name=mps Count=100\n";
  auto g = crisp::gres_device_files(conf, "gpu", "gpu03");
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_EQ(*g, (std::vector<std::string>{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3", "/dev/nvidia4"}));
  EXPECT_EQ(crisp::gres_device_files(conf, "gpu", "big")->size(), 8u);
  EXPECT_TRUE(crisp::gres_device_files(conf, "gpu", "cpu01")->empty());
  EXPECT_TRUE(crisp::gres_device_files(conf, "mps", "gpu01")->empty()) << "no File=";
  auto bad = crisp::gres_device_files("Name=gpu File=/dev/nvidia[0-\n", "gpu", "n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("gres.conf line 1"), std::string::npos);
}

TEST(Gres, IndexLists) {
  EXPECT_EQ(*crisp::parse_index_list("0,2-3"), (std::vector<unsigned>{0, 2, 3}));
  EXPECT_TRUE(crisp::parse_index_list("")->empty());
  EXPECT_FALSE(crisp::parse_index_list("x").ok());
}

const char* kNvidiaYaml = R"(---
cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
- name: "0"
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
- name: GPU-4f1d
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
- name: all
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
    - path: /dev/nvidia1
containerEdits:
  env:
  - NVIDIA_VISIBLE_DEVICES=void
  deviceNodes:
  - path: /dev/nvidiactl
  - path: /dev/nvidia-uvm
    hostPath: /dev/nvidia-uvm
    permissions: rw
  mounts:
  - hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.550.54
    containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.550.54
    options: [ro, nosuid, nodev, bind]
  hooks:
  - hookName: createContainer
    path: /usr/bin/nvidia-cdi-hook
    args: [nvidia-cdi-hook, update-ldcache, --folder, /usr/lib/x86_64-linux-gnu]
  additionalGIDs: [44]
)";

TEST(Cdi, NvidiaYamlSpec) {
  auto s = crisp::parse_cdi_spec(kNvidiaYaml, "/etc/cdi/nvidia.yaml");
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->kind, "nvidia.com/gpu");
  EXPECT_EQ(s->version, "0.5.0");
  ASSERT_EQ(s->devices.size(), 3u);
  EXPECT_EQ(s->edits.env, (std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=void"}));
  ASSERT_EQ(s->edits.device_nodes.size(), 2u);
  EXPECT_EQ(s->edits.device_nodes[1].permissions, "rw");
  ASSERT_EQ(s->edits.mounts.size(), 1u);
  EXPECT_EQ(s->edits.mounts[0].options[0], "ro");
  ASSERT_EQ(s->edits.hooks.size(), 1u);
  EXPECT_EQ(s->edits.hooks[0].args[1], "update-ldcache");
  EXPECT_EQ(s->edits.additional_gids, (std::vector<uint32_t>{44}));
  const crisp::CdiDevice* d = crisp::cdi_device_for(*s, "/dev/nvidia0");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->name, "0") << "the device of that file, not 'all'";
  EXPECT_EQ(crisp::cdi_device_for(*s, "/dev/nvidia7"), nullptr);
}

TEST(Cdi, JsonSpecOfAnotherVersionAndVendor) {
  const char* json = R"({"cdiVersion": "0.3.0", "kind": "amd.com/gpu",
    "devices": [{"name": "0", "containerEdits": {"deviceNodes": [
      {"path": "/dev/dri/renderD128", "hostPath": "/dev/dri/renderD128", "uid": 0, "gid": 44, "fileMode": 438}]}}],
    "containerEdits": {"deviceNodes": [{"path": "/dev/kfd"}]}})";
  auto s = crisp::parse_cdi_spec(json, "/var/run/cdi/amd.json");
  ASSERT_TRUE(s.ok()) << s.error();
  // uid, gid and fileMode are accepted and not applied: CRI devices take the node's own.
  EXPECT_EQ(s->devices[0].edits.device_nodes[0].host_path, "/dev/dri/renderD128");
  EXPECT_NE(crisp::cdi_device_for(*s, "/dev/dri/renderD128"), nullptr);
  EXPECT_TRUE(crisp::parse_cdi_spec(R"({"cdiVersion":"1.1.0","kind":"intel.com/gpu","devices":[{"name":"card0"}]})",
                                    "x.json")
                  .ok());
}

TEST(Cdi, MalformedSpecsSayWhatIsWrong) {
  struct Case {
    const char* text;
    const char* source;
    const char* says;
  } cases[] = {
      {"{", "a.json", "not valid JSON"},
      {"kind: [", "a.yaml", "not valid YAML"},
      {R"({"kind":"x.com/gpu","devices":[{"name":"0"}]})", "a.json", "'cdiVersion' is missing"},
      {R"({"cdiVersion":"9.9.9","kind":"x.com/gpu","devices":[{"name":"0"}]})", "a.json", "unsupported cdiVersion '9.9.9'"},
      {R"({"cdiVersion":"0.5.0","kind":"nogpu","devices":[{"name":"0"}]})", "a.json", "kind 'nogpu' is not vendor/class"},
      {R"({"cdiVersion":"0.5.0","kind":"x.com/gpu","devices":[]})", "a.json", "'devices' must be a non-empty list"},
      {R"({"cdiVersion":"0.5.0","kind":"x.com/gpu","devices":[{"name":"0","containerEdits":{"deviceNodes":[{"path":"dev/x"}]}}]})",
       "a.json", "device path 'dev/x' is not absolute"},
      {R"({"cdiVersion":"0.5.0","kind":"x.com/gpu","devices":[{"name":"0","containerEdits":{"env":["NOEQUALS"]}}]})", "a.json",
       "env entry 'NOEQUALS' is not NAME=VALUE"},
      {R"({"cdiVersion":"0.5.0","kind":"x.com/gpu","devices":[{"name":"0","containerEdits":{"mounts":[{"hostPath":"/a"}]}}]})",
       "a.json", "'containerPath' is missing"},
      {R"({"cdiVersion":"0.5.0","kind":"x.com/gpu","devices":[{"name":"0","containerEdits":{"hooks":[{"path":"/h"}]}}]})",
       "a.json", "'hookName' is missing"},
  };
  for (const Case& c : cases) {
    auto r = crisp::parse_cdi_spec(c.text, c.source);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().find(c.says), std::string::npos) << r.error();
    EXPECT_EQ(r.error().rfind(std::string("CDI spec ") + c.source, 0), 0u) << r.error();
  }
}

}  // namespace

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "agent/devices/gpu_plan.h"

namespace {

// A node with four NVIDIA GPUs, as files under a temporary root.
class FakeGpuNode : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "mknod needs root";
    char tmpl[] = "/tmp/crisp-gpu-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    roots_.dev = root_ + "/dev";
    roots_.proc = root_ + "/proc";
    roots_.gres_conf = root_ + "/gres.conf";
    roots_.cdi_dirs = {root_ + "/etc-cdi", root_ + "/run-cdi"};
    for (const char* d : {"/dev", "/etc-cdi", "/run-cdi", "/proc", "/proc/driver", "/proc/driver/nvidia",
                          "/proc/driver/nvidia/gpus"})
      ASSERT_EQ(mkdir((root_ + d).c_str(), 0755), 0);
    for (int i = 0; i < 4; ++i) {
      ASSERT_EQ(mknod((roots_.dev + "/nvidia" + std::to_string(i)).c_str(), S_IFCHR | 0666, makedev(195, i)), 0);
      std::string bdf = roots_.proc + "/driver/nvidia/gpus/0000:0" + std::to_string(i + 1) + ":00.0";
      ASSERT_EQ(mkdir(bdf.c_str(), 0755), 0);
      std::ofstream(bdf + "/information") << "Model: Fake H200\nGPU UUID: GPU-fake-" << i << "\nDevice Minor: " << i << "\n";
    }
    ASSERT_EQ(mknod((roots_.dev + "/nvidiactl").c_str(), S_IFCHR | 0666, makedev(195, 255)), 0);
    ASSERT_EQ(mknod((roots_.dev + "/nvidia-uvm").c_str(), S_IFCHR | 0666, makedev(234, 0)), 0);
    std::ofstream(roots_.gres_conf) << "Name=gpu File=" << roots_.dev << "/nvidia[0-3]\n";
  }
  void TearDown() override {
    if (!root_.empty()) (void)!system(("rm -rf " + root_).c_str());
  }
  std::string root_;
  crisp::DeviceRoots roots_;
};

TEST_F(FakeGpuNode, WithoutCdiTheAllocatedGpusAndTheControlDevices) {
  auto plan = crisp::plan_gpus(roots_, "n1", {1, 3});
  ASSERT_TRUE(plan.ok()) << plan.error();
  std::vector<std::string> inside;
  for (const auto& d : plan->devices) inside.push_back(d.container_path);
  EXPECT_EQ(inside, (std::vector<std::string>{"/dev/nvidia1", "/dev/nvidia3", "/dev/nvidiactl", "/dev/nvidia-uvm"}));
  EXPECT_EQ(plan->devices[0].host_path, roots_.dev + "/nvidia1");
  EXPECT_EQ(plan->env, (std::vector<std::string>{"CUDA_VISIBLE_DEVICES=0,1", "NVIDIA_VISIBLE_DEVICES=GPU-fake-1,GPU-fake-3"}));
  EXPECT_TRUE(crisp::plan_gpus(roots_, "n1", {})->devices.empty()) << "no GPUs, no devices";
  auto bad = crisp::plan_gpus(roots_, "n1", {4});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("GPU index 4 is not in"), std::string::npos);
}

TEST_F(FakeGpuNode, ACdiSpecNamingTheDevicesIsApplied) {
  std::ofstream(roots_.cdi_dirs[0] + "/fake.yaml") << "cdiVersion: 0.6.0\nkind: nvidia.com/gpu\ndevices:\n"
      << "- name: \"0\"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n      hostPath: " << roots_.dev << "/nvidia0\n"
      << "- name: \"1\"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia1\n      hostPath: " << roots_.dev << "/nvidia1\n"
      << "containerEdits:\n  env: [FAKE_DRIVER=1]\n  deviceNodes:\n  - path: /dev/nvidiactl\n    hostPath: " << roots_.dev
      << "/nvidiactl\n  mounts:\n  - hostPath: /etc/hostname\n    containerPath: /usr/lib/libcuda.so.1\n    options: [ro, bind]\n"
      << "  hooks:\n  - hookName: createContainer\n    path: /bin/true\n  additionalGIDs: [44]\n";
  auto plan = crisp::plan_gpus(roots_, "n1", {1});
  ASSERT_TRUE(plan.ok()) << plan.error();
  std::vector<std::string> inside;
  for (const auto& d : plan->devices) inside.push_back(d.container_path);
  EXPECT_EQ(inside, (std::vector<std::string>{"/dev/nvidia1", "/dev/nvidiactl"}));
  ASSERT_EQ(plan->mounts.size(), 1u);
  EXPECT_TRUE(plan->mounts[0].readonly);
  EXPECT_EQ(plan->gids, (std::vector<uint32_t>{44}));
  EXPECT_EQ(plan->hooks.size(), 1u);
  EXPECT_EQ(plan->env[0], "FAKE_DRIVER=1");
  EXPECT_EQ(plan->env[1], "CUDA_VISIBLE_DEVICES=0");
  roots_.gpu_cdi_kinds = {"amd.com/gpu"};
  auto other_kind = crisp::plan_gpus(roots_, "n1", {1});
  ASSERT_TRUE(other_kind.ok());
  EXPECT_TRUE(other_kind->mounts.empty()) << "a spec of a kind not configured for gpu is not used";
  roots_.gpu_cdi_kinds = {"nvidia.com/gpu"};
  EXPECT_EQ(crisp::plan_gpus(roots_, "n1", {1})->mounts.size(), 1u);
  std::ofstream(roots_.cdi_dirs[1] + "/broken.json") << "{";
  auto broken = crisp::plan_gpus(roots_, "n1", {1});
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.error().find("broken.json: not valid JSON"), std::string::npos);
}

}  // namespace

#include "agent/devices/rdma_plan.h"

namespace {

// Two HCAs: mlx5_0 behind the PCIe switch of GPU 0000:05:00.0 (NUMA 0), mlx5_1
// on the other root complex (NUMA 1), where GPU 0000:82:00.0 sits on another root port.
class FakeRdmaNode : public FakeGpuNode {
 protected:
  void SetUp() override {
    FakeGpuNode::SetUp();
    if (IsSkipped()) return;
    roots_.sys = root_ + "/sys";
    std::string sw = roots_.sys + "/devices/pci0000:00/0000:00:01.0/0000:02:00.0";
    pci(sw + "/0000:03:00.0/0000:04:00.0", 0);
    pci(sw + "/0000:03:01.0/0000:05:00.0", 0);
    pci(roots_.sys + "/devices/pci0000:80/0000:80:01.0/0000:81:00.0", 1);
    pci(roots_.sys + "/devices/pci0000:80/0000:80:02.0/0000:82:00.0", 1);
    hca("mlx5_0", sw + "/0000:03:00.0/0000:04:00.0", "uverbs0");
    hca("mlx5_1", roots_.sys + "/devices/pci0000:80/0000:80:01.0/0000:81:00.0", "uverbs1");
    sh("mkdir -p " + roots_.sys + "/bus/pci/devices " + roots_.dev + "/infiniband");
    sh("ln -s " + sw + "/0000:03:01.0/0000:05:00.0 " + roots_.sys + "/bus/pci/devices/0000:05:00.0");
    sh("ln -s " + roots_.sys + "/devices/pci0000:80/0000:80:02.0/0000:82:00.0 " + roots_.sys + "/bus/pci/devices/0000:82:00.0");
    for (auto [name, minor] : {std::pair{"uverbs0", 192}, {"uverbs1", 193}, {"umad0", 0}, {"rdma_cm", 58}})
      ASSERT_EQ(mknod((roots_.dev + "/infiniband/" + name).c_str(), S_IFCHR | 0666, makedev(231, minor)), 0);
  }
  void sh(const std::string& cmd) { ASSERT_EQ(system(cmd.c_str()), 0) << cmd; }
  void pci(const std::string& dir, int numa) {
    sh("mkdir -p " + dir);
    std::ofstream(dir + "/numa_node") << numa << "\n";
  }
  void hca(const std::string& name, const std::string& dev, const std::string& verbs) {
    std::string cls = roots_.sys + "/class/infiniband/" + name;
    sh("mkdir -p " + cls + "/ports/1 " + dev + "/infiniband_verbs/" + verbs);
    sh("ln -s " + dev + " " + cls + "/device");
  }
  std::vector<std::string> names(const std::vector<crisp::Hca>& hs) {
    std::vector<std::string> out;
    for (const auto& h : hs) out.push_back(h.name);
    return out;
  }
};

TEST_F(FakeRdmaNode, AllHcasByDefaultWithVerbsAndRdmaCmButNoUmad) {
  auto plan = crisp::plan_rdma(roots_, crisp::HcaPolicy::kAll, {});
  std::vector<std::string> inside;
  for (const auto& d : plan.devices) inside.push_back(d.container_path);
  EXPECT_EQ(inside, (std::vector<std::string>{"/dev/infiniband/uverbs0", "/dev/infiniband/uverbs1", "/dev/infiniband/rdma_cm"}));
  EXPECT_EQ(plan.env, (std::vector<std::string>{"NCCL_IB_HCA==mlx5_0:1,mlx5_1:1"}));
  EXPECT_EQ(names(plan.hcas), (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
}

TEST_F(FakeRdmaNode, NearestHcaBySwitchThenNuma) {
  auto hcas = crisp::list_hcas(roots_);
  ASSERT_EQ(hcas.size(), 2u);
  EXPECT_EQ(hcas[1].numa_node, 1);
  EXPECT_EQ(names(crisp::choose_hcas(roots_, hcas, crisp::HcaPolicy::kNearestGpu, {"0000:05:00.0"})),
            std::vector<std::string>{"mlx5_0"}) << "same PCIe switch";
  EXPECT_EQ(names(crisp::choose_hcas(roots_, hcas, crisp::HcaPolicy::kNearestGpu, {"0000:82:00.0"})),
            std::vector<std::string>{"mlx5_1"}) << "another root port, same NUMA node";
  EXPECT_EQ(crisp::choose_hcas(roots_, hcas, crisp::HcaPolicy::kNearestGpu, {}).size(), 2u) << "no GPU: all";
  auto plan = crisp::plan_rdma(roots_, crisp::HcaPolicy::kNearestGpu, {"0000:05:00.0"});
  EXPECT_EQ(plan.env, (std::vector<std::string>{"NCCL_IB_HCA==mlx5_0:1"}));
  EXPECT_EQ(plan.devices.size(), 2u);
}

TEST_F(FakeRdmaNode, GpuPlanKnowsItsGpusPciAddresses) {
  auto plan = crisp::plan_gpus(roots_, "n1", {2});
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ(plan->gpu_bdfs, (std::vector<std::string>{"0000:03:00.0"}));
}

}  // namespace

#include "agent/devices/driver_discovery.h"

namespace {

TEST(DriverDiscovery, LdconfigListingAndPaths) {
  auto libs = crisp::parse_ldconfig_listing(
      "3 libs found in cache `/etc/ld.so.cache'\n"
      "\tlibnvidia-ml.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1\n"
      "\tlibcuda.so.1 (libc6) => /usr/lib/i386-linux-gnu/libcuda.so.1\n"
      "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1\n");
  ASSERT_EQ(libs.size(), 2u) << "64-bit entries only";
  EXPECT_EQ(libs[1].soname, "libcuda.so.1");
  EXPECT_EQ(libs[1].path, "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  EXPECT_EQ(crisp::driver_path_env({"PATH=/bin", "LD_LIBRARY_PATH=/usr/local/nvidia/lib64"}),
            (std::vector<std::string>{"PATH=/bin:/usr/local/nvidia/bin"}));
  EXPECT_EQ(crisp::driver_path_env({})[0], "LD_LIBRARY_PATH=/usr/local/nvidia/lib64");
}

TEST_F(FakeGpuNode, WithoutCdiTheDriverComesFromTheLdCache) {
  // A library whose soname is libcuda.so.1, cached by the real ldconfig, and an nvidia-smi.
  std::string lib = root_ + "/lib";
  ASSERT_EQ(system(("mkdir -p " + lib + " " + root_ + "/bin && echo 'int cuInit(int f){return f;}' > " + root_ +
                    "/c.c && cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o " + lib + "/libcuda.so.1 " + root_ +
                    "/c.c && echo " + lib + " > " + root_ + "/ld.so.conf && ldconfig -C " + root_ + "/ld.so.cache -f " +
                    root_ + "/ld.so.conf && printf '#!/bin/sh\\n' > " + root_ + "/bin/nvidia-smi")
                       .c_str()),
            0);
  roots_.ld_cache = root_ + "/ld.so.cache";
  roots_.bin_dirs = {root_ + "/none", root_ + "/bin"};
  auto plan = crisp::plan_gpus(roots_, "n1", {0});
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_TRUE(plan->driver_mounted);
  std::vector<std::string> inside;
  for (const auto& m : plan->mounts) inside.push_back(m.host_path + " " + m.container_path + (m.readonly ? " ro" : ""));
  EXPECT_EQ(inside, (std::vector<std::string>{lib + "/libcuda.so.1 /usr/local/nvidia/lib64/libcuda.so.1 ro",
                                              root_ + "/bin/nvidia-smi /usr/local/nvidia/bin/nvidia-smi ro"}));
}

}  // namespace

#include "agent/devices/cdi_hooks.h"

namespace {

TEST(CdiHooks, RunWithTheOciStateArgsAndEnvAndTheirFailuresNamed) {
  char tmpl[] = "/tmp/crisp-hook-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  std::ofstream(dir + "/hook.sh") << "#!/bin/sh\ncat > " << dir << "/state.json\necho \"$1 $HOOK_VAR\" > " << dir
                                  << "/args\n";
  ASSERT_EQ(chmod((dir + "/hook.sh").c_str(), 0755), 0);
  crisp::CdiHook hook{"createContainer", dir + "/hook.sh", {"nvidia-cdi-hook", "update-ldcache"}, {"HOOK_VAR=v"}, 5};
  std::string state = crisp::oci_state_json("abc123", 4242, "/run/bundles/abc123");
  ASSERT_TRUE(crisp::run_cdi_hook(hook, state).ok());
  std::ifstream got(dir + "/state.json");
  std::string text((std::istreambuf_iterator<char>(got)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, R"({"bundle":"/run/bundles/abc123","id":"abc123","ociVersion":"1.0.2","pid":4242,"status":"running"})");
  std::ifstream args(dir + "/args");
  std::string line;
  std::getline(args, line);
  EXPECT_EQ(line, "update-ldcache v") << "args[0] is the program name (OCI), the rest its arguments";
  crisp::CdiHook failing{"createContainer", "/bin/false", {}, {}, std::nullopt};
  auto f = crisp::run_cdi_hook(failing, state);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error(), "CDI hook /bin/false failed (exit status 1)");
  crisp::CdiHook slow{"createContainer", "/bin/sleep", {"sleep", "5"}, {}, 1};
  auto t = crisp::run_cdi_hook(slow, state);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error(), "CDI hook /bin/sleep did not finish within its timeout");
  (void)!system(("rm -rf " + dir).c_str());
}

}  // namespace
