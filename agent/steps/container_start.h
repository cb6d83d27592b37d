// ContainerStarter: what a container made for a step, a spare or an import's check
// needs once created: started, its holder up (after an image's entrypoint), CDI hooks
// run, its root made the user's, a squashfs image's entrypoint run in it.
// Calls: containerd's CRI and snapshot service, agent/host/ (holder, root, entrypoint),
// agent/devices/ (CDI hooks), and the root giver it is given.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "agent/cri/cri_types.h"
#include "agent/cri/spec_builder.h"
#include "agent/host/holder_process.h"
#include "agent/host/user_rootfs.h"
#include "agent/steps/phase_clock.h"
#include "agent/steps/step_plan.h"

namespace crisp {

class CriClient;

class SnapshotClient;

// What an entrypoint's CRI log keeps of its output, to explain its failure.
inline constexpr size_t kEntrypointLogKept = 1u << 20;

// Makes a container's root filesystem the user's (user_rootfs.h's give_rootfs_to_user; a
// seam for the fake CRI's tests).
using RootGiver = std::function<Status(const RootfsRequest&)>;

struct StartSettings {
  std::string holder_exe = kHolderTarget;  // the holder as /proc/PID/exe shows it
  std::chrono::seconds entrypoint_timeout{60};
  // containerd's task bundles, for CDI hooks' OCI state: <state>/io.containerd.runtime.v2.task/k8s.io/<id>.
  std::string bundle_root = "/run/crisp/containerd/io.containerd.runtime.v2.task/k8s.io";
  std::string rootfs_stage;  // HostDirs::rootfs_stage
  // containerd's snapshot service (a container's layers); null (the fake CRI's tests): the
  // root is given without them.
  SnapshotClient* snapshots = nullptr;
};

class ContainerStarter {
 public:
  ContainerStarter(CriClient& cri, StartSettings settings, RootGiver give_rootfs)
      : cri_(cri), settings_(std::move(settings)), give_rootfs_(std::move(give_rootfs)) {}

  // Everything above, in order, for plan's container (plan.container_id); plan.pid is its holder.
  Status start(const v1::CreateStepRequest& req, StepPlan& plan, PhaseClock& clock);
  // Only started, its holder up and its root the user's: a spare (no entrypoint, hooks or mounts).
  Status start_bare(const v1::CreateStepRequest& req, StepPlan& plan);
  // The holder's pid, as containerd reports it.
  Result<int> holder_pid(const std::string& container_id);

 private:
  Status start_and_find_holder(StepPlan& plan);
  // entrypoint: what runs before the holder, named in a failure's line ("": nothing).
  Status wait_for_holder(const v1::CreateStepRequest& req, StepPlan& plan, int pid, const std::string& entrypoint);
  Status run_hooks(const StepPlan& plan);
  Status give_rootfs(const v1::CreateStepRequest& req, StepPlan& plan);
  Status run_file_entrypoint(const v1::CreateStepRequest& req, StepPlan& plan);

  CriClient& cri_;
  const StartSettings settings_;
  const RootGiver give_rootfs_;
};

}  // namespace crisp
