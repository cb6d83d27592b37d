// StepSite: the site's mounts and environment (agent/site/site_config.h) for a step's
// container, with ${NAME} from the job's environment. A literal source is the admin's,
// opened by root through what no user can change (agent/host/admin_paths.h); one with a
// ${NAME} in it is the user's, resolved with their rights like their own mounts. A mount
// that cannot be made is left out and logged (one user must not fail everyone's jobs by
// making a site path theirs), unless its source is missing without "nofail", which fails
// the step as enroot does. Calls: agent/site/, agent/host/.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "agent/site/site_config.h"
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

class StepSite {
 public:
  StepSite(std::vector<SiteDir> dirs, JobPartitionQuery partition)
      : config_(std::move(dirs)), partition_(std::move(partition)) {}

  // The job's lines (its partition's included), read now.
  SiteLines lines(const v1::CreateStepRequest& req) const;
  // The site's variables, substituted, into out.site_env.
  void environment(const v1::CreateStepRequest& req, const SiteLines& lines, v1::CreateStepResponse& out) const;
  // The site's mounts, resolved, into plan.user_mounts (before the user's own).
  Status mounts(const v1::CreateStepRequest& req, const SiteLines& lines, StepPlan& plan) const;

 private:
  SiteConfig config_;
  const JobPartitionQuery partition_;
};

}  // namespace crisp
