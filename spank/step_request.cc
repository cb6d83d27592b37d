#include "spank/step_request.h"

#include "common/env.h"
#include "common/mount_spec.h"

namespace crisp {

v1::CreateStepRequest build_create_request(const StepContext& step, const ContainerOptions& opts,
                                           const PluginConfig& config) {
  v1::CreateStepRequest req;
  req.set_job_id(step.job_id);
  req.set_step_id(step.step_id);
  req.set_uid(step.uid);
  req.set_gid(step.gid);
  for (uint32_t g : step.groups) req.add_supplementary_gids(g);
  req.set_user(step.user);
  if (opts.image) {
    req.set_image(opts.image->canonical());
    req.set_registry_user(opts.image->user);
  }
  // Relative to the job's directory, as Pyxis resolves it; crispd refuses one still relative.
  if (!opts.image_file.empty())
    // normalize_path drops "." and "//" only: ".." stays for the kernel, through symlinks as they are.
    req.set_image_file(opts.image_file.front() == '/' || step.workdir.empty()
                           ? opts.image_file
                           : normalize_path(step.workdir + "/" + opts.image_file));
  for (const MountSpec& spec : opts.mounts) {
    MountSpec m = resolve_relative(spec, step.workdir);
    v1::BindMount* b = req.add_mounts();
    b->set_tmpfs(m.tmpfs);
    b->set_tmpfs_options(m.tmpfs_options);
    b->set_source(m.source);
    b->set_target(m.target);
    b->set_readonly(m.readonly);
    b->set_propagation(m.propagation);
    b->set_unmount(m.umount);
    b->set_nofail(m.nofail);
  }
  if (config.mount_workdir) req.set_job_workdir(step.workdir);
  req.set_stepd_pid(step.stepd_pid);
  req.set_name(opts.name);
  req.set_name_mode(opts.mode == NameMode::kCreate  ? v1::NAME_CREATE
                    : opts.mode == NameMode::kExec  ? v1::NAME_EXEC
                    : opts.mode == NameMode::kNoExec ? v1::NAME_NO_EXEC
                                                     : v1::NAME_AUTO);
  req.set_global_scope(config.global_scope);
  req.set_readonly_rootfs(opts.readonly);
  req.set_mount_home(opts.mount_home);
  req.set_remap_root(opts.remap_root);
  req.set_unshare(opts.unshare);
  if (auto home = env_value(step.env, "HOME"); home && !home->empty() && home->front() == '/') req.set_home(*home);
  for (const std::string& name : opts.env_names)
    if (auto v = env_value(step.env, name)) req.add_entrypoint_env(name + "=" + *v);
  // The site's files take ${NAME} from it (crispd's agent/site/); a frame from root may
  // hold 4 MiB, so a huge environment is cut rather than fail the step: a variable that
  // would pass the bound is left out, the smaller ones after it kept.
  size_t env_bytes = 0;
  for (const std::string& kv : step.env) {
    if (env_bytes + kv.size() > kMaxJobEnvBytes) continue;
    env_bytes += kv.size();
    req.add_job_env(kv);
  }
  req.set_entrypoint(opts.entrypoint);
  req.set_entrypoint_log(opts.entrypoint_log);
  req.set_batch_script(step.batch_script);
  req.set_gpus(step.gpus);
  return req;
}

std::string job_workdir_from_env(const std::vector<std::string>& env) {
  auto pwd = env_value(env, "PWD");
  return pwd && pwd->size() > 1 && pwd->front() == '/' ? *pwd : std::string();
}

}  // namespace crisp
