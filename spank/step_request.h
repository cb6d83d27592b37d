// What slurmstepd knows about a step, and the crispd request built from it.
// Pure, so the mapping is unit-tested without Slurm.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "crisp.pb.h"
#include "spank/options.h"

namespace crisp {

struct StepContext {
  uint32_t job_id = 0;
  uint32_t step_id = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;
  std::string user;
  std::string workdir;  // the job's working directory on the node
  int32_t stepd_pid = 0;
  std::string batch_script;  // the batch step's spooled script; empty for other steps
  std::string gpus;          // SLURM_STEP_GPUS (SLURM_JOB_GPUS for the batch step)
  std::vector<std::string> env;  // the job's environment, NAME=VALUE
};

// At most this much of the job's environment goes to crispd (for the site's ${NAME}s).
inline constexpr size_t kMaxJobEnvBytes = 1u << 20;

v1::CreateStepRequest build_create_request(const StepContext& step, const ContainerOptions& opts,
                                           const PluginConfig& config);

// The job's working directory from its environment: srun exports PWD as the
// directory the tasks start in.
std::string job_workdir_from_env(const std::vector<std::string>& env);

}  // namespace crisp
