// StepSite: the site's mounts and environment (agent/site/site_config.h) for a step's
// container, with ${NAME} from the job's environment. A literal source is the admin's,
// opened by root through what no user can change (agent/host/admin_paths.h); one with a
// ${NAME} in it is the user's, resolved with their rights like their own mounts. A mount
// that cannot be made is left out and logged (one user must not fail everyone's jobs by
// making a site path theirs), unless its source is missing without "nofail", which fails
// the step as enroot does. The site's hooks run for each step once its container runs (as
// enroot runs them at each start), in order, each bounded in time; the first that fails
// fails the step. Calls: agent/site/, agent/host/.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "agent/host/site_hook.h"
#include "agent/site/site_config.h"
#include "agent/site/site_files.h"
#include "agent/steps/step_plan.h"

namespace crisp {

// The job's partition, as slurmctld says (slurm_jobs.h's slurm_job_partition); unset:
// partitions/ is not read.
using JobPartitionQuery = std::function<Result<std::string>(uint32_t job_id)>;

// At most this many variables of the job's environment are looked at (the request's are
// the user's).
inline constexpr size_t kMaxJobEnv = 16384;
// At most this many bytes of the site's variables, substituted, go in an answer.
inline constexpr size_t kMaxSiteEnvBytes = 1u << 20;

using SiteHookRunner = std::function<Result<SiteHookOutput>(const SiteHookRun&)>;

// What of the site applies to one job: its lines, and its environment for ${NAME}.
struct JobSite {
  SiteLines lines;
  EnvLookup job_env;
};

class StepSite {
 public:
  StepSite(std::vector<SiteDir> dirs, JobPartitionQuery partition, std::chrono::milliseconds hook_timeout,
           SiteHookRunner run_hook = run_site_hook)
      : config_(std::move(dirs)), partition_(std::move(partition)), hook_timeout_(hook_timeout),
        run_hook_(std::move(run_hook)) {}

  // The job's lines (its partition's included, then the user's own enroot configuration's
  // where crispd is told to read it), read now, and its environment. An error: one in the user's
  // files, for the step to fail with.
  Result<JobSite> read(const v1::CreateStepRequest& req) const;
  // The site's variables, substituted, into out.site_env.
  void environment(const JobSite& site, v1::CreateStepResponse& out) const;
  // The site's mounts, resolved, into plan.user_mounts (before the user's own).
  Status mounts(const JobSite& site, StepPlan& plan) const;
  // The site's hooks for the step, in its started container, within hook_timeout together:
  // the variables they gave (ENROOT_ENVIRON), for the step's environment after the site's.
  struct HookTarget {
    int holder_pid = 0;
    uint64_t holder_start = 0;
    std::string container_id;
  };
  Result<std::vector<std::string>> run_hooks(const JobSite& site, const v1::CreateStepRequest& req,
                                             const HookTarget& target) const;

 private:
  SiteConfig config_;
  const JobPartitionQuery partition_;
  const std::chrono::milliseconds hook_timeout_;
  const SiteHookRunner run_hook_;
};

}  // namespace crisp
