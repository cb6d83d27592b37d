#include "agent/steps/step_host.h"

#include <sys/stat.h>

#include "agent/devices/rdma_plan.h"
#include "agent/host/entrypoint.h"
#include "common/mount_spec.h"
#include "common/slurm_ids.h"

namespace crisp {

// tmpfs mounts, the HCA view and the entrypoint's log file: made now, owned by host until the create succeeds.
Status StepHost::prepare(const v1::CreateStepRequest& req, StepPlan& plan, HostArtifacts& host) {
  StepContainerInput& in = plan.in;
  plan.key = std::to_string(plan.scope.job_id) + "." +
             (plan.named ? std::to_string(req.uid()) + "." + req.name() : slurm::step_name(req.step_id()));
  if (auto s = stage_mounts(req, plan, host); !s) return s;
  // Only the chosen HCAs show in /sys/class/infiniband, where the node has that class.
  struct stat ib {};
  const std::vector<Hca>& hcas = plan.rdma.hcas;
  if (!hcas.empty() && hcas.size() < list_hcas(devices_).size() &&
      stat(settings_.container_sysfs_class.c_str(), &ib) == 0) {
    std::vector<std::string> names;
    for (const Hca& h : hcas) names.push_back(h.name);
    if (auto s = host.make_hca_view(settings_.container_sysfs_class, names, settings_.dirs.hca_views + "/" + plan.key); !s)
      return s;
    in.hca_view = host.hca_view();
  }
  if (!in.entrypoint.empty() || plan.file_rc) {
    // Its output explains a failing entrypoint, and is shown on request.
    if (auto s = prepare_log_directory(kLogDirectory, kLogDirectorySize); !s) return s;
    in.log_path = plan.key + ".log";
    host.add_file(std::string(kLogDirectory) + "/" + in.log_path);
  }
  return Ok{};
}

// The user's sources, cloned where containerd cannot be misled, and the tmpfs mounts.
Status StepHost::stage_mounts(const v1::CreateStepRequest& req, StepPlan& plan, HostArtifacts& host) {
  StepContainerInput& in = plan.in;
  if (plan.user_mounts.empty() && !plan.workdir && plan.tmpfs_mounts.empty()) return Ok{};
  if (auto s = host.open_mount_root(settings_.dirs.mounts, plan.key); !s) return s;
  in.tmpfs_root = host.mount_root();
  for (auto& [source, mount] : plan.user_mounts) {
    const std::string& p = mount.propagation();
    auto at = host.stage(source, p == "slave" || p == "rslave" || p == "shared" || p == "rshared");
    if (!at) return at.take_error();
    in.mounts.push_back(mount);
    in.mounts.back().set_source(*at);
  }
  if (plan.workdir) {
    auto at = host.stage(*plan.workdir);
    if (!at) return at.take_error();
    in.workdir_source = *at;
  }
  for (const v1::BindMount& m : plan.tmpfs_mounts) {
    if (auto s = check_tmpfs_options(m.tmpfs_options()); !s) return s;
    std::string options = "size=" + settings_.tmpfs_size + (m.tmpfs_options().empty() ? "" : "," + m.tmpfs_options());
    auto dir = host.make_tmpfs(req.uid(), req.gid(), options);
    if (!dir) return dir.take_error();
    in.tmpfs.emplace_back(*dir, m.target());
  }
  return Ok{};
}

}  // namespace crisp
