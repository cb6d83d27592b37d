// A job's sandbox and its steps' holder containers: a container per step,
// removed at the step's end; the job's sandbox is made by its first step on
// the node and kept for the next ones (saving RunPodSandbox per step) until
// the job ends there (the plugin's job epilog, or the sweep as safety net).
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <map>
#include <memory>
#include <mutex>

#include "agent/cri_client.h"
#include "agent/gpu_plan.h"
#include "agent/rdma_plan.h"
#include "agent/images.h"
#include "agent/spec_builder.h"
#include "crisp.pb.h"

namespace crisp {

struct StepSettings {
  NodeSettings node;
  std::string runtime_handler;
  int64_t stop_timeout_s = 2;
  std::chrono::seconds entrypoint_timeout{60};
  std::string registry_auth_file;  // the node's Docker-format credentials; empty: none
  std::string holder_exe = kHolderTarget;  // the holder as /proc/PID/exe shows it
  DeviceRoots devices;
  HcaPolicy hca_policy = HcaPolicy::kAll;
  // The sysfs the containers see (runc mounts the host's): where the HCA view must cover.
  std::string container_sysfs_class = "/sys/class/infiniband";
  // containerd's task bundles, for CDI hooks' OCI state: <state>/io.containerd.runtime.v2.task/k8s.io/<id>.
  std::string bundle_root = "/run/crisp/containerd/io.containerd.runtime.v2.task/k8s.io";
};

class StepManager {
 public:
  StepManager(CriClient& cri, ImageStore& images, StepSettings settings)
      : cri_(cri), images_(images), settings_(std::move(settings)) {}

  Result<v1::CreateStepResponse> create(const v1::CreateStepRequest& req);
  Result<v1::ReleaseResponse> release_step(uint32_t job_id, uint32_t step_id);
  Result<v1::ReleaseResponse> release_job(uint32_t job_id);
  Result<v1::ReleaseResponse> remove_named(uint32_t uid, const std::string& name);
  // only_uid < 0: every job's steps.
  Result<v1::ListResponse> list(uint32_t job_id, int64_t only_uid);

  // Serializes all changes to one job's sandbox and containers.
  std::unique_lock<std::mutex> lock_job(uint32_t job_id);
  // Removes the containers (stopping them first) and then the job's empty sandboxes.
  Status remove_containers(const std::vector<cri::Container>& containers, v1::ReleaseResponse& out);
  Status remove_sandbox_if_empty(const cri::PodSandbox& sandbox, bool& removed);

  CriClient& cri() { return cri_; }
  const StepSettings& settings() const { return settings_; }
  std::atomic<uint64_t> created{0}, released{0};

 private:
  Result<cri::PodSandbox> find_or_run_sandbox(const JobIdentity& job, const cri::PodSandboxConfig& config);
  Labels job_selector(uint32_t job_id) const;
  // The running container of that name and user in scope (job, or 0: global);
  // others of that name are leftovers and removed.
  Result<std::optional<cri::Container>> find_named(const JobIdentity& scope, const std::string& name);
  Result<v1::CreateStepResponse> attach(const cri::Container& c, const v1::CreateStepRequest& req);

  CriClient& cri_;
  ImageStore& images_;
  StepSettings settings_;
  std::mutex jobs_mu_;
  std::map<uint32_t, std::shared_ptr<std::mutex>> job_locks_;
};

}  // namespace crisp
