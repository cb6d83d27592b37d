// The thin seam around the SPANK API, the only file that calls it: everything
// the plugin reads from or writes to Slurm goes through here, so the rest is
// plain C++.
#pragma once

#include "spank/slurm_spank.h"

#include <optional>
#include <string>
#include <vector>

#include "common/env.h"
#include "common/result.h"
#include "spank/step_request.h"

namespace crisp::seam {

// The Slurm program the plugin runs in (srun, sbatch or salloc, slurmstepd, slurmd).
spank_context_t context();
// Whether sp is slurmstepd's, where the step's callbacks do their work.
bool remote(spank_t sp);
// Adds the options to the program's command line; the first that fails is named.
Status register_options(spank_t sp, std::vector<spank_option>& options);
// An option as the job gave it, where no option callback runs (the prolog:
// slurmd's SPANK_ variables): its argument ("" for a flag), nullopt if not given.
std::optional<std::string> job_option(spank_t sp, spank_option& option);

Result<StepContext> read_step(spank_t sp);
std::vector<std::string> job_env(spank_t sp);
int local_task_id(spank_t sp);
// The step's tasks on this node; 0 when Slurm does not say.
uint32_t local_task_count(spank_t sp);
Status apply_env(spank_t sp, const std::vector<EnvEdit>& edits);
Result<uint32_t> job_id(spank_t sp);
// The job's owner (the prolog's S_JOB_UID and S_JOB_GID).
Result<std::pair<uint32_t, uint32_t>> job_owner(spank_t sp);
// This node's index in the step (S_JOB_NODEID); -1 when Slurm does not say.
int node_id(spank_t sp);

// The one line a user sees for an error they can fix.
void user_error(const std::string& message);
// Output the user asked for (the entrypoint's log), on the task's stderr.
void user_output(const std::string& text);
// An error slurmstepd itself reports (after the tasks, as --container-save's):
// its log, and the user's srun.
void stepd_error(const std::string& message);
// Logged by the Slurm daemon we run in (slurmd's or slurmstepd's log).
void daemon_log(const std::string& message);
// Ends srun, sbatch or salloc (the user's command, before it submitted anything) with status.
[[noreturn]] void exit_command(int status);
// Ends the task being set up (a forked child of slurmstepd, before its exec) with status.
[[noreturn]] void exit_task(int status);

}  // namespace crisp::seam
