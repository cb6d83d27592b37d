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

// Where Slurm placed a process in one hierarchy, read from its /proc/PID/cgroup line, by
// position, not by the names of the job's directories:
//   cgroup v1 (every release): /slurm[_NODE]/uid_U/job_J/step_S[/task_T]
//   cgroup v2 (from 22.05):    /SLICE.../[NODE_]slurmstepd.scope/JOB/step_S/{slurm,user/task_T}
//                              (JOB: job_J, or from 26.05 the job's unique id, such as s5JDM92NCKF500)
struct SlurmCgroup {
  bool v2 = false;
  std::string own;        // the process's own cgroup
  std::string step, job;  // its step's and job's directories
  std::string user;       // v1's uid_U; empty on v2, which has no user level
};
// nullopt: the line is not in Slurm's tree (containerd's, systemd's, the root).
std::optional<SlurmCgroup> slurm_cgroup_of(const CgroupOf& line);

// Where a container's processes go at level, within the hierarchy. On v1 the level's
// directory. On v2 a leaf, since a cgroup with children holds no process: for a step the
// caller's own (its task's, killed with the step), for a job crisp's leaf in the job's
// directory (crisp_job_J, which crispd empties and removes with the container); none for a
// user (v2 has no user level: the processes stay in containerd's cgroup, the sandbox's).
std::optional<std::string> adoption_target(const SlurmCgroup& c, SlurmLevel level, uint32_t job_id);

// Where a v1 hierarchy is mounted: /sys/fs/cgroup/<controllers>, "name=X" as X.
std::string hierarchy_dir(const std::string& controllers, const std::string& root = "/sys/fs/cgroup");
// Where the v2 hierarchy is: root itself (a cgroup v2 machine), or root/unified (hybrid).
std::string unified_dir(const std::string& root = "/sys/fs/cgroup");

// Moves every process of the container whose holder is holder_pid into the
// caller's Slurm cgroups at level (adoption_target), in each hierarchy Slurm manages.
// The holder itself, crisp's idle process, stays: in the step's cgroup it
// would hold the step's end until Slurm's kill, and keep Slurm from removing
// the step's cgroups. Nothing to do (Ok) where the caller is in no Slurm cgroup.
Status adopt_container_processes(int holder_pid, SlurmLevel level, uint32_t job_id);

// The cgroup directories a named container's processes were adopted into, for a job (job_id
// 0: for the user) in every hierarchy: v1's <root>/<hierarchy>/slurm*/uid_U[/job_J], v2's
// crisp_job_J leaves under a slurmstepd scope. Slurm puts none of its own processes there.
std::vector<std::string> slurm_cgroup_dirs(uint32_t uid, uint32_t job_id, const std::string& root = "/sys/fs/cgroup");

// Kills every process directly in the cgroup directory dir (of any hierarchy).
void kill_cgroup_processes(const std::string& dir);

}  // namespace crisp
