// StepHost: what the step's container needs made on the host before it is created: its
// mount root (tmpfs mounts, the user's sources staged where containerd cannot be misled),
// the view of /sys/class/infiniband with only its HCAs, the entrypoint's log file. The
// "host" phase; what it makes is owned by the HostArtifacts given, until the create succeeds.
// Calls: agent/host/, agent/devices/ (the node's HCAs).
#pragma once

#include <string>

#include "agent/devices/device_roots.h"
#include "agent/host/host_artifacts.h"
#include "agent/host/host_mounts.h"
#include "agent/steps/step_plan.h"

namespace crisp {

// The entrypoints' CRI logs: the tmpfs they share.
inline constexpr uint64_t kLogDirectorySize = 64u << 20;

struct HostSettings {
  HostDirs dirs;
  // The sysfs the containers see (runc mounts the host's): where the HCA view must cover.
  std::string container_sysfs_class = "/sys/class/infiniband";
  // The size limit of each tmpfs of --container-mounts, in tmpfs's terms.
  std::string tmpfs_size = "25%";
};

class StepHost {
 public:
  StepHost(HostSettings settings, DeviceRoots devices) : settings_(std::move(settings)), devices_(std::move(devices)) {}
  Status prepare(const v1::CreateStepRequest& req, StepPlan& plan, HostArtifacts& host);

 private:
  Status stage_mounts(const v1::CreateStepRequest& req, StepPlan& plan, HostArtifacts& host);

  const HostSettings settings_;
  const DeviceRoots devices_;
};

}  // namespace crisp
