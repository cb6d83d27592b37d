// Slurm's cgroups (v1, proctrack/cgroup and task/cgroup) and a container's
// processes: runc puts them in containerd's cgroups, outside the job's limits
// and outside what Slurm kills at a step's or job's end. The step's task moves
// them into its own Slurm cgroups, at the level of the container's life.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace crisp {

struct CgroupOf {
  std::string controllers;  // "memory", "cpu,cpuacct", "name=systemd"; empty on cgroup v2
  std::string path;         // within the hierarchy
};

// The lines of /proc/PID/cgroup ("ID:CONTROLLERS:PATH").
std::vector<CgroupOf> parse_proc_cgroup(std::string_view text);

// Where a container lives in Slurm's tree: with one step, one job, or beyond its jobs (the user's).
enum class SlurmLevel { kStep, kJob, kUser };

// A Slurm cgroup path cut at level: ".../uid_5/job_7/step_0/task_1" -> ".../uid_5/job_7" for kJob.
// nullopt: not one of Slurm's (no such component).
std::optional<std::string> slurm_cgroup_at(std::string_view path, SlurmLevel level);

// Where a v1 hierarchy is mounted: /sys/fs/cgroup/<controllers>, "name=X" as X.
std::string hierarchy_dir(const std::string& controllers, const std::string& root = "/sys/fs/cgroup");

// Moves every process of the container whose holder is holder_pid into the
// caller's Slurm cgroups, cut at level, in each hierarchy Slurm manages.
// The holder itself, crisp's idle process, stays: in the step's cgroup it
// would hold the step's end until Slurm's kill, and keep Slurm from removing
// the step's cgroups. Nothing to do (Ok) where the caller is in no Slurm cgroup.
Status adopt_container_processes(int holder_pid, SlurmLevel level);

// The Slurm cgroup directories of a job (job_id 0: of the user) in every
// hierarchy: <root>/<hierarchy>/slurm*/uid_U[/job_J]. A named container's
// processes live directly in them, where Slurm puts none of its own.
std::vector<std::string> slurm_cgroup_dirs(uint32_t uid, uint32_t job_id, const std::string& root = "/sys/fs/cgroup");

// Kills every process directly in the cgroup directory dir (of any hierarchy).
void kill_cgroup_processes(const std::string& dir);

}  // namespace crisp
