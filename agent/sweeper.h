// The safety net behind the plugin's release calls: containers whose holder
// exited (its slurmstepd is gone), running containers of jobs that are over
// (a create that finished after the job's epilog), and empty sandboxes are removed.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "agent/slurm/slurm_jobs.h"
#include "agent/steps/containers.h"
#include "agent/steps/job_locks.h"
#include "agent/steps/spare_containers.h"
#include "agent/steps/user_sandboxes.h"

namespace crisp {

class Metrics;

// What the sweep reads and removes.
struct SweepParts {
  CriClient& cri;
  JobLocks& locks;
  Containers& containers;
  SpareContainers& spares;
  UserSandboxes& sandboxes;
  ClaimBook& claims;
  Metrics& metrics;
};

// One pass; returns how many containers and sandboxes it removed. jobs says
// which jobs are over (none given: only exited containers go).
uint64_t sweep_once(const SweepParts& parts, std::chrono::seconds sandbox_grace, const JobCheck& jobs = {});

class Sweeper {
 public:
  Sweeper(SweepParts parts, std::chrono::seconds interval, std::chrono::seconds sandbox_grace, JobCheck jobs);
  ~Sweeper();

 private:
  const SweepParts parts_;
  std::chrono::seconds interval_, grace_;
  JobCheck jobs_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace crisp
