// StepDevices: the step's GPUs (those Slurm gave it, confirmed with slurmctld), their CDI
// mounts, hooks and variables, and the RDMA devices that go with them. The "devices" phase.
// Calls: agent/devices/, and the slurmctld question it is given.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "agent/devices/device_roots.h"
#include "agent/slurm/slurm_jobs.h"
#include "agent/devices/rdma_plan.h"
#include "agent/steps/step_plan.h"

namespace crisp {

// What slurmctld says of a step's GPUs on a node (slurm_jobs.h's slurm_step_gpus); unset: a
// step that names GPUs is refused.
using StepGpusQuery = std::function<Result<StepGpus>(uint32_t job, uint32_t step, const std::string& node)>;

class StepDevices {
 public:
  StepDevices(DeviceRoots devices, HcaPolicy hca_policy, std::string node_name, StepGpusQuery step_gpus)
      : devices_(std::move(devices)),
        hca_policy_(hca_policy),
        node_name_(std::move(node_name)),
        step_gpus_(std::move(step_gpus)) {}

  Status plan(const v1::CreateStepRequest& req, StepPlan& plan);
  const DeviceRoots& roots() const { return devices_; }

 private:
  Result<std::vector<unsigned>> granted_gpus(const v1::CreateStepRequest& req);

  const DeviceRoots devices_;
  const HcaPolicy hca_policy_;
  const std::string node_name_;
  const StepGpusQuery step_gpus_;
};

}  // namespace crisp
