#include "agent/steps/step_site.h"

#include <algorithm>
#include <iterator>
#include <map>

#include "agent/host/admin_paths.h"
#include "agent/site/site_files.h"
#include "agent/site/user_site_dir.h"
#include "agent/steps/step_paths.h"
#include "common/deadline.h"
#include "common/log.h"
#include "common/slurm_ids.h"
#include "common/strings.h"

namespace crisp {
namespace {

// The job's environment as the request has it: the first value of a name wins, as getenv's.
EnvLookup job_lookup(const v1::CreateStepRequest& req) {
  auto env = std::make_shared<std::map<std::string, std::string, std::less<>>>();
  size_t n = 0;
  for (const std::string& kv : req.job_env()) {
    if (++n > kMaxJobEnv) break;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env->emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return [env](std::string_view name) -> std::optional<std::string> {
    auto it = env->find(name);
    if (it == env->end()) return std::nullopt;
    return it->second;
  };
}

// Of the job's variables, those a hook gets: not the names crispd sets (getenv takes the
// first), nor those that would run the user's code in the admin's program (BASH_ENV, ENV,
// the dynamic loader's).
bool passed_to_hooks(std::string_view kv) {
  std::string_view name = kv.substr(0, kv.find('='));
  for (std::string_view ours : {"SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_JOB_UID", "SLURM_JOB_GID", "SLURM_JOB_USER",
                                "CRISP_CONTAINER_ID", "BASH_ENV", "ENV"})
    if (name == ours) return false;
  return !name.starts_with("ENROOT_") && !name.starts_with("LD_");
}

// What a hook sees besides enroot's variables: the job's environment (a root hook gets none
// of it: its values are the user's) and the job's identity.
std::vector<std::string> hook_environment(const v1::CreateStepRequest& req, const std::string& container_id, bool as_root) {
  std::vector<std::string> env;
  if (as_root) env.emplace_back("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  else
    std::copy_if(req.job_env().begin(), req.job_env().begin() + std::min<int>(req.job_env_size(), kMaxJobEnv),
                 std::back_inserter(env), passed_to_hooks);
  for (std::string kv : {"SLURM_JOB_ID=" + std::to_string(req.job_id()), "SLURM_STEP_ID=" + std::to_string(req.step_id()),
                         "SLURM_JOB_UID=" + std::to_string(req.uid()), "SLURM_JOB_GID=" + std::to_string(req.gid()),
                         "SLURM_JOB_USER=" + req.user(), "CRISP_CONTAINER_ID=" + container_id})
    env.push_back(std::move(kv));
  return env;
}

// Whether text has a line other than a comment or a blank one.
bool has_mount_lines(const std::string& text) {
  EnvLookup none = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
  for (const std::string& line : split(text, '\n'))
    if (auto parsed = parse_fstab_line(line, none); !parsed || *parsed) return true;
  return false;
}

}  // namespace

Result<std::vector<std::string>> StepSite::run_hooks(const JobSite& site, const v1::CreateStepRequest& req,
                                                     const HookTarget& target) const {
  std::vector<std::string> env;
  if (site.lines.hooks.empty()) return env;
  size_t bytes = 0;
  // enroot formats what hooks write without substituting it.
  EnvLookup literally = [](std::string_view name) -> std::optional<std::string> { return "${" + std::string(name) + "}"; };
  const std::vector<std::string> user_env = hook_environment(req, target.container_id, false),
                                 root_env = hook_environment(req, target.container_id, true);
  const UserCreds user = creds_of(req);
  Deadline deadline(hook_timeout_);  // the step's hooks together
  for (const SiteHook& hook : site.lines.hooks) {
    if (deadline.remaining_ms() <= 0)
      return fail(ErrorKind::kTimedOut, "the site's hook " + hook.path + " did not finish within its time: tell your admin");
    SiteHookRun run{hook.path,
                    std::nullopt,
                    target.holder_pid,
                    target.holder_start,
                    hook.as_root ? root_env : user_env,
                    std::chrono::milliseconds(deadline.remaining_ms())};
    if (!hook.as_root) run.as_user = user;
    auto out = run_hook_(run);
    if (!out) {
      log_warn(slurm::step_text(req.job_id(), req.step_id()) + ": " + out.error());
      return out.take_error();
    }
    if (has_mount_lines(out->mounts))
      config_.report(hook.path + ":mounts", hook.path + ": its ENROOT_MOUNTS lines are not applied (crisp mounts what " +
                                                "mounts.d names, read before the container is made)");
    for (std::string& kv : parse_environ_lines(out->environ, literally)) {
      if ((bytes += kv.size()) > kMaxSiteEnvBytes || env.size() >= kMaxSiteEnv)
        return fail("the site's hook " + hook.path + " gave more than 1 MiB of variables: tell your admin");
      env.push_back(std::move(kv));
    }
  }
  return env;
}

Result<JobSite> StepSite::read(const v1::CreateStepRequest& req) const {
  std::string partition;
  if (partition_ && config_.has_partitions()) {
    auto p = partition_(req.job_id());
    if (p) partition = *p;
    else config_.report("partition", "jobs' partitions' files (partitions/) left out while slurmctld cannot say: " + p.error());
  }
  JobSite site{config_.lines_for(partition), job_lookup(req)};
  if (!config_.reads_users()) return site;
  if (auto dir = user_enroot_dir(site.job_env))
    if (auto s = read_user_enroot_dir(creds_of(req), *dir, site.lines); !s) return s.take_error();
  return site;
}

void StepSite::environment(const JobSite& site, v1::CreateStepResponse& out) const {
  size_t bytes = 0;
  for (const SiteLine& file : site.lines.environ)
    for (std::string& kv : parse_environ_lines(file.text, site.job_env)) {
      // The answer must fit a frame whatever the job's values make of the lines.
      if (static_cast<size_t>(out.site_env_size()) >= kMaxSiteEnv || bytes + kv.size() > kMaxSiteEnvBytes) {
        config_.report(file.origin + ":size", file.origin + ": variables left out: over " +
                                                  std::to_string(kMaxSiteEnvBytes) + " bytes once substituted");
        continue;
      }
      bytes += kv.size();
      out.add_site_env(std::move(kv));
    }
}

Status StepSite::mounts(const JobSite& site, StepPlan& plan) const {
  size_t users_mounts = 0;
  for (const SiteLine& line : site.lines.mounts) {
    if (line.users) {
      if (auto s = add_user_fstab_line(line.origin + ": ", line.text, plan, users_mounts); !s) return s;
      continue;
    }
    auto parsed = parse_fstab_line(line.text, site.job_env);
    if (!parsed) {
      config_.report(line.origin + ":line", line.origin + ": skipped: " + parsed.error());
      continue;
    }
    if (!*parsed) continue;
    auto spec = site_mount_of(**parsed, line.read_write_default);
    if (!spec) {
      config_.report(line.origin + ":spec", line.origin + ": skipped: " + spec.error());
      continue;
    }
    if (spec->tmpfs) {
      plan.tmpfs_mounts.push_back(tmpfs_mount(spec->target, spec->tmpfs_options));
      continue;
    }
    if (!spec->ignored.empty())
      config_.report(line.origin + ":ignored",
                     line.origin + ": " + join(spec->ignored, ",") + " not applied (a bind mount keeps its source's flags)");
    auto source = spec->source_from_env ? resolve_as_user(plan.creds, spec->source) : open_admin_path(spec->source);
    if (!source && source.error_kind() == ErrorKind::kNotFound) {
      if (spec->optional) continue;
      return fail("the site's mount " + spec->source.substr(0, kMaxReportBytes) + " (" + line.origin +
                  ") does not exist on this node: tell your admin");
    }
    if (!source) {
      config_.report(line.origin + ":source:" + std::to_string(static_cast<int>(source.error_kind())),
                     line.origin + ": " + spec->source + " left out: " + source.error());
      continue;
    }
    plan.user_mounts.emplace_back(std::move(*source), bind_mount_of(*spec));
  }
  return Ok{};
}

}  // namespace crisp
