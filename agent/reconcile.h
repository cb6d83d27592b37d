// The safety net behind the plugin's release calls: containers whose holder
// exited (its slurmstepd is gone), running containers of jobs that are over
// (a create that finished after the job's epilog), and empty sandboxes are removed.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "agent/slurm_jobs.h"
#include "agent/step_manager.h"

namespace crisp {

// One pass; returns how many containers and sandboxes it removed. jobs says
// which jobs are over (none given: only exited containers go).
uint64_t sweep_once(StepManager& steps, std::chrono::seconds sandbox_grace, const JobCheck& jobs = {});

class Sweeper {
 public:
  Sweeper(StepManager& steps, std::chrono::seconds interval, std::chrono::seconds sandbox_grace, JobCheck jobs);
  ~Sweeper();
  uint64_t swept() const { return swept_; }

 private:
  StepManager& steps_;
  std::chrono::seconds interval_, grace_;
  JobCheck jobs_;
  std::atomic<uint64_t> swept_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace crisp
