// Whether a job is over, as slurmctld says: the sweep removes running
// containers only of jobs it knows to be over, never on doubt.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace crisp {

enum class JobLiveness { kAlive, kOver, kUnknown };
using JobCheck = std::function<JobLiveness(uint32_t job_id)>;

// Asks slurmctld through libslurm (the node's slurm.conf). kUnknown when it
// cannot be reached; kOver when the job ended or is no longer known.
JobLiveness slurm_job_liveness(uint32_t job_id);
// The same of a step: kOver also when its job runs but slurmctld no longer lists the step.
JobLiveness slurm_step_liveness(uint32_t job_id, uint32_t step_id);

// What slurmctld says of a step's GPUs on node, which the user cannot write
// (SLURM_STEP_GPUS is in the job's environment: on Slurm 22.05 a step
// without GPUs keeps the user's value; one with GPUs gets slurmstepd's).
struct StepGpus {
  bool has = false;                           // the step holds GPUs (the batch and interactive steps: the job's)
  std::optional<std::vector<unsigned>> within;  // the job's indices on node, where slurmctld knows them
};
// An error: slurmctld cannot say.
Result<StepGpus> slurm_step_gpus(uint32_t job_id, uint32_t step_id, const std::string& node);

// The partition a job runs in, as slurmctld says (the job's environment is the user's).
Result<std::string> slurm_job_partition(uint32_t job_id);

}  // namespace crisp
