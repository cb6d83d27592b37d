#include "agent/steps/step_devices.h"

#include <algorithm>

#include "agent/devices/gpu_plan.h"
#include "agent/devices/gres.h"
#include "agent/steps/step_paths.h"
#include "common/log.h"
#include "common/slurm_ids.h"

namespace crisp {

Status StepDevices::plan(const v1::CreateStepRequest& req, StepPlan& plan) {
  auto add_devices = [&](const std::vector<PlannedDevice>& devices, const std::vector<std::string>& env) {
    for (const PlannedDevice& d : devices) {
      cri::Device dev;
      dev.set_host_path(d.host_path);
      dev.set_container_path(d.container_path);
      dev.set_permissions(d.permissions);
      plan.in.devices.push_back(dev);
    }
    for (const std::string& e : env) plan.out.add_device_env(e);
  };
  auto indices = granted_gpus(req);
  if (!indices) return indices.take_error();
  if (!indices->empty()) {
    auto gpus = plan_gpus(devices_, node_name_, *indices);
    if (!gpus) return gpus.take_error();
    add_devices(gpus->devices, gpus->env);
    // The admin's CDI spec names these host paths: no user check applies.
    for (const PlannedMount& m : gpus->mounts)
      plan.in.mounts.push_back(bind_mount(m.host_path, m.container_path, m.readonly));
    for (uint32_t g : gpus->gids) plan.in.groups.push_back(g);
    plan.gpu_bdfs = gpus->gpu_bdfs;
    plan.driver_mounted = gpus->driver_mounted;
    plan.hooks = gpus->hooks;
  }
  plan.rdma = plan_rdma(devices_, hca_policy_, plan.gpu_bdfs);
  add_devices(plan.rdma.devices, plan.rdma.env);
  return Ok{};
}

// The step's GPUs: those the job's environment names (SLURM_STEP_GPUS, which
// the user can set) if slurmctld says the step holds GPUs, and among the job's
// indices on this node where slurmctld knows them.
Result<std::vector<unsigned>> StepDevices::granted_gpus(const v1::CreateStepRequest& req) {
  auto named = parse_index_list(req.gpus());
  if (!named || named->empty()) return named;
  if (!step_gpus_) return fail("crispd cannot confirm the step's GPUs: it has no Slurm controller to ask");
  auto said = step_gpus_(req.job_id(), req.step_id(), node_name_);
  if (!said) return fail("cannot confirm the step's GPUs with slurmctld (" + said.error() + "): try again");
  std::vector<unsigned> granted;
  std::string refused;
  for (unsigned i : *named) {
    bool ok = said->has && (!said->within || std::find(said->within->begin(), said->within->end(), i) != said->within->end());
    if (ok) granted.push_back(i);
    else refused += (refused.empty() ? "" : ",") + std::to_string(i);
  }
  if (!refused.empty())
    log_warn(slurm::step_text(req.job_id(), req.step_id()) + " (uid " + std::to_string(req.uid()) +
             "): GPU(s) " + refused + " named in its environment are not the step's; not given");
  return granted;
}

}  // namespace crisp
