// How the image's environment and the job's combine in each task, as in Pyxis:
// the image's values win, except for the names the user lists in
// --container-env and Slurm's and PMIx's own (SLURM_*, PMIX_*, PMI_*), which
// stay the job's; host library paths (LD_*) and the locale (LANG, LANGUAGE,
// LC_ALL) are dropped; PATH comes from the image.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace crisp {

struct EnvEdit {
  std::string name;
  std::optional<std::string> value;  // nullopt: unset

  bool operator==(const EnvEdit&) const = default;
};

inline constexpr std::string_view kDefaultPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// image_env and job_env hold "NAME=VALUE" strings; keep holds the --container-env names.
std::vector<EnvEdit> merge_env(const std::vector<std::string>& image_env,
                               const std::vector<std::string>& job_env,
                               const std::vector<std::string>& keep);

// For images that set PYTORCH_VERSION, torch.distributed's variables from
// Slurm's, as enroot's PyTorch hook (which Pyxis sites enable) sets them:
// RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR (the step's first node) and
// MASTER_PORT (49152 + job id % 16384); a name the image sets is left alone.
std::vector<EnvEdit> pytorch_env(const std::vector<std::string>& image_env, const std::vector<std::string>& job_env);

// A task's own GPUs in the container's numbering, where the step's n GPUs
// are 0..n-1 in gres order: those its --gpu-bind/--gpus-per-task binding gives
// it (bound_gpus below), else its CUDA_VISIBLE_DEVICES and kin renumbered from
// the step's list in step_env (gres indices, or 0..n-1 under ConstrainDevices).
// A variable set in only one of them, or naming a GPU not the step's, is left alone.
std::vector<EnvEdit> task_gpu_env(const std::vector<std::string>& step_env, const std::vector<std::string>& task_env,
                                  unsigned n);

// The GPUs, as positions among the step's n, that Slurm's --gpu-bind (or
// --gpus-per-task) gives local task `task`, read from SLURMD_TRES_BIND
// ("gpu:per_task:1", "gpu:map_gpu:0,1", "gpu:mask_gpu:0x1,0x2", "verbose," first
// allowed; newer releases write "gres/gpu:", --tres-bind "map:" and "mask:"); nullopt
// where it binds by topology (closest, single) or not at all.
// Slurm's own per-task variables number a task's GPUs among the task's alone
// under ConstrainDevices (every task sees "0"): inside, all the step's are there.
std::optional<std::vector<unsigned>> bound_gpus(std::string_view tres_bind, unsigned task, unsigned n);

// The first host of a Slurm host list: "gpu[07-09,12],cpu1" -> "gpu07".
std::string first_host(std::string_view hostlist);

// The value of name in a "NAME=VALUE" list (a job's or an image's environment); the first wins, as with getenv.
std::optional<std::string> env_value(const std::vector<std::string>& env, std::string_view name);

// --container-env: NAME[,NAME...]
Result<std::vector<std::string>> parse_env_names(std::string_view text);

// A variable's name: letters, digits and '_', not starting with a digit.
bool valid_env_name(std::string_view name);

}  // namespace crisp
