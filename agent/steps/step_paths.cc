#include "agent/steps/step_paths.h"

#include "agent/site/site_files.h"
#include "common/mount_spec.h"
#include "common/passwd.h"
#include "common/strings.h"

namespace crisp {

v1::BindMount bind_mount(const std::string& source, const std::string& target, bool readonly) {
  v1::BindMount m;
  m.set_source(source);
  m.set_target(target);
  m.set_readonly(readonly);
  return m;
}

v1::BindMount tmpfs_mount(const std::string& target, const std::string& options) {
  v1::BindMount m;
  m.set_target(target);
  m.set_tmpfs(true);
  m.set_tmpfs_options(options);
  return m;
}

v1::BindMount bind_mount_of(const SiteMountSpec& spec) {
  v1::BindMount m = bind_mount(spec.source, spec.target, spec.readonly);
  m.set_propagation(spec.propagation);
  return m;
}

// The user's own paths, resolved with their credentials: what they name must be theirs to read.
Status resolve_user_paths(const v1::CreateStepRequest& req, StepPlan& plan) {
  for (const v1::BindMount& m : req.mounts()) {
    if (m.tmpfs()) {
      plan.tmpfs_mounts.push_back(m);
      continue;
    }
    auto src = resolve_as_user(plan.creds, m.source());
    if (!src && src.error_kind() == ErrorKind::kNotFound)
      return fail("--container-mounts: source path does not exist: " + m.source());
    if (!src) return fail("mount source " + src.error() + ": you must be able to reach it");
    plan.user_mounts.emplace_back(std::move(*src), m);
  }
  auto home = home_of(req.uid());
  if (home) plan.home = *home;
  if (req.mount_home()) {
    // The job's $HOME, as enroot mounts it; resolved as the user like any source.
    if (req.home().empty() && !home) return home.take_error();
    std::string path = req.home().empty() ? *home : req.home();
    auto dir = resolve_as_user(plan.creds, path);
    if (!dir) return fail("--container-mount-home: your home directory " + dir.error());
    plan.user_mounts.emplace_back(std::move(*dir), bind_mount("", req.remap_root() ? "/root" : path, false));
  }
  // slurmd spooled it; slurmstepd (root) vouches for the path.
  if (!req.batch_script().empty())
    plan.in.mounts.push_back(bind_mount(req.batch_script(), req.batch_script(), true));
  if (!req.job_workdir().empty()) {
    // A working directory the user cannot reach stays unmounted; slurmstepd then reports it.
    if (auto wd = resolve_as_user(plan.creds, req.job_workdir()); wd && wd->is_directory) {
      plan.in.workdir = wd->path;
      plan.in.workdir_alias = normalize_path(req.job_workdir());
      plan.workdir = std::move(*wd);
    }
  }
  return Ok{};
}

Status add_user_fstab_line(const std::string& at, std::string_view line, StepPlan& plan, size_t& added) {
  auto parsed = parse_fstab_line(line, plan.job_env);
  if (parsed && !*parsed) return Ok{};
  auto spec = parsed ? site_mount_of(**parsed, true) : Result<SiteMountSpec>(parsed.take_error());
  if (!spec) return fail(at + spec.error());
  if (++added > kMaxUserFstabMounts) return fail(at + "more than " + std::to_string(kMaxUserFstabMounts) + " mounts");
  if (spec->tmpfs) {
    plan.tmpfs_mounts.push_back(tmpfs_mount(spec->target, spec->tmpfs_options));
    return Ok{};
  }
  auto src = resolve_as_user(plan.creds, spec->source);
  if (!src && src.error_kind() == ErrorKind::kNotFound && spec->optional) return Ok{};
  if (!src && src.error_kind() == ErrorKind::kNotFound) return fail(at + "source path does not exist: " + spec->source);
  if (!src) return fail(at + "mount source " + src.error() + ": you must be able to reach it");
  plan.user_mounts.emplace_back(std::move(*src), bind_mount_of(*spec));
  return Ok{};
}

Status add_image_mounts(const std::string& fstab, const std::string& image, StepPlan& plan) {
  std::vector<std::string> lines = split(fstab, '\n');
  size_t added = 0;
  for (size_t i = 0; i < lines.size(); ++i)
    if (auto s = add_user_fstab_line("image file " + image + ": /etc/fstab:" + std::to_string(i + 1) + ": ", lines[i], plan, added); !s)
      return s;
  return Ok{};
}

}  // namespace crisp
