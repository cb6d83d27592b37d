// The plugin's work, one function per Slurm callback, split by context as the
// files are: local.cc (srun/sbatch/salloc), remote.cc (slurmstepd), slurmd.cc.
#pragma once

#include "spank/slurm_spank.h"

#include <string>
#include <vector>

#include "spank/options.h"

namespace crisp {

struct PluginState {
  RawOptions raw;
  PluginConfig config;
};
PluginState& plugin_state();

int local_init_post_opt(spank_t sp);
// srun, sbatch or salloc refuses the user's options: crisp's line, then the command ends.
[[noreturn]] void refuse(const std::string& message);
int remote_init_post_opt(spank_t sp);
int remote_user_init(spank_t sp);
int remote_task_init_privileged(spank_t sp);
int remote_task_init(spank_t sp);
int remote_task_post_fork(spank_t sp);
int remote_task_exit(spank_t sp);
int remote_exit(spank_t sp);
int slurmd_job_epilog(spank_t sp);
// Reads the job's options (options: plugin.cc's table, in option_defs()'s
// order), then starts the image's pull on this node.
int slurmd_job_prolog(spank_t sp, std::vector<spank_option>& options);

}  // namespace crisp
