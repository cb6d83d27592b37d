#include "spank/step_request.h"

#include "common/strings.h"

namespace crisp {

v1::CreateStepRequest build_create_request(const StepContext& step, const ContainerOptions& opts) {
  v1::CreateStepRequest req;
  req.set_job_id(step.job_id);
  req.set_step_id(step.step_id);
  req.set_uid(step.uid);
  req.set_gid(step.gid);
  for (uint32_t g : step.groups) req.add_supplementary_gids(g);
  req.set_user(step.user);
  req.set_image(opts.image.canonical());
  for (const MountSpec& m : opts.mounts) {
    v1::BindMount* b = req.add_mounts();
    b->set_source(m.source);
    b->set_target(m.target);
    b->set_readonly(m.readonly);
    b->set_propagation(m.propagation);
  }
  req.set_job_workdir(step.workdir);
  req.set_stepd_pid(step.stepd_pid);
  return req;
}

std::string job_workdir_from_env(const std::vector<std::string>& env) {
  for (const std::string& kv : env)
    if (starts_with(kv, "PWD=") && kv.size() > 5 && kv[4] == '/') return kv.substr(4);
  return {};
}

}  // namespace crisp
