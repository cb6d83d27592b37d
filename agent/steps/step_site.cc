#include "agent/steps/step_site.h"

#include <map>

#include "agent/host/admin_paths.h"
#include "agent/site/site_files.h"
#include "common/log.h"
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

}  // namespace

SiteLines StepSite::lines(const v1::CreateStepRequest& req) const {
  std::string partition;
  if (partition_ && config_.has_partitions()) {
    auto p = partition_(req.job_id());
    if (p) partition = *p;
    else config_.report("partition", "jobs' partitions' files (partitions/) left out while slurmctld cannot say: " + p.error());
  }
  return config_.lines_for(partition);
}

void StepSite::environment(const v1::CreateStepRequest& req, const SiteLines& lines, v1::CreateStepResponse& out) const {
  EnvLookup lookup = job_lookup(req);
  size_t bytes = 0;
  for (const SiteLine& file : lines.environ)
    for (std::string& kv : parse_environ_lines(file.text, lookup)) {
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

Status StepSite::mounts(const v1::CreateStepRequest& req, const SiteLines& lines, StepPlan& plan) const {
  EnvLookup lookup = job_lookup(req);
  for (const SiteLine& line : lines.mounts) {
    auto parsed = parse_fstab_line(line.text, lookup);
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
    v1::BindMount m;
    m.set_target(spec->target);
    m.set_readonly(spec->readonly);
    m.set_propagation(spec->propagation);
    plan.user_mounts.emplace_back(std::move(*source), std::move(m));
  }
  return Ok{};
}

}  // namespace crisp
