#include "agent/spares/claim_plan.h"

#include <algorithm>

namespace crisp {
namespace {

Error differs(const std::string& what) { return fail(ErrorKind::kUnsupported, "the spare differs in " + what); }

bool same_mount(const cri::Mount& a, const cri::Mount& b) {
  return a.host_path() == b.host_path() && a.container_path() == b.container_path() && a.readonly() == b.readonly() &&
         a.propagation() == b.propagation();
}

// The holder's command but its last argument (the slurmstepd it watches; a spare's watches none).
Status same_process(const cri::ContainerConfig& job, const cri::ContainerConfig& spare) {
  if (job.command_size() != spare.command_size() || !std::equal(job.command().begin(), job.command().end(), spare.command().begin()))
    return differs("its command (an entrypoint)");
  if (job.args_size() != spare.args_size() || job.args_size() == 0 ||
      !std::equal(job.args().begin(), job.args().end() - 1, spare.args().begin()))
    return differs("its arguments");
  if (job.envs_size() != spare.envs_size()) return differs("its environment");
  for (int i = 0; i < job.envs_size(); ++i)
    if (job.envs(i).key() != spare.envs(i).key() || job.envs(i).value() != spare.envs(i).value())
      return differs("its environment");
  if (job.working_dir() != spare.working_dir()) return differs("its working directory");
  if (!job.log_path().empty() || !spare.log_path().empty()) return differs("its log");
  return Ok{};
}

Status same_security(const cri::ContainerConfig& job, const cri::ContainerConfig& spare) {
  const auto& a = job.linux().security_context();
  const auto& b = spare.linux().security_context();
  if (a.run_as_user().value() != b.run_as_user().value() || a.run_as_group().value() != b.run_as_group().value())
    return differs("its user");
  if (a.readonly_rootfs() || b.readonly_rootfs()) return differs("a read-only root");
  if (a.no_new_privs() != b.no_new_privs() || a.privileged() != b.privileged() ||
      a.namespace_options().SerializeAsString() != b.namespace_options().SerializeAsString() ||
      a.capabilities().SerializeAsString() != b.capabilities().SerializeAsString())
    return differs("its privileges or namespaces");
  return Ok{};
}

}  // namespace

Result<ClaimPlan> plan_claim(const cri::ContainerConfig& job, const cri::ContainerConfig& spare) {
  if (job.image().image() != spare.image().image()) return differs("its image");
  if (auto s = same_process(job, spare); !s) return s.take_error();
  if (auto s = same_security(job, spare); !s) return s.take_error();
  if (spare.devices_size() != 0) return differs("its devices");
  ClaimPlan plan;
  std::vector<bool> matched(static_cast<size_t>(spare.mounts_size()), false);
  for (const cri::Mount& m : job.mounts()) {
    int found = -1;
    for (int i = 0; i < spare.mounts_size() && found < 0; ++i)
      if (!matched[static_cast<size_t>(i)] && same_mount(m, spare.mounts(i))) found = i;
    if (found >= 0) {
      matched[static_cast<size_t>(found)] = true;
      continue;
    }
    // A mount attached later is a private one; shared or slave ones are the runtime's to make.
    if (m.propagation() != cri::PROPAGATION_PRIVATE) return differs("the propagation of " + m.container_path());
    plan.mounts.push_back(m);
  }
  if (std::find(matched.begin(), matched.end(), false) != matched.end()) return differs("its mounts");
  plan.devices.assign(job.devices().begin(), job.devices().end());
  return plan;
}

}  // namespace crisp
