// StepEnds: the end of a step, of a job (its processes first, what its epilog waits for,
// then its containers) and of a named container a user removes. Calls: JobLocks,
// Containers, StepSessions, SpareContainers (its maker waits for removals), Metrics.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "agent/steps/containers.h"
#include "agent/steps/job_locks.h"
#include "agent/steps/step_sessions.h"
#include "crisp.pb.h"

namespace crisp {

class Metrics;
class SpareContainers;

class StepEnds {
 public:
  StepEnds(JobLocks& locks, Containers& containers, StepSessions& sessions, SpareContainers& spares, Metrics& metrics)
      : locks_(locks), containers_(containers), sessions_(sessions), spares_(spares), metrics_(metrics) {}

  // A release may be answered before containerd's stop and removal, 70 ms a container:
  // a step's end (and so srun) need not wait for them, nor a job's epilog (and so the
  // node's next job), which waits only until no process of the job is left. answered_first,
  // if given, is called once the caller may be told; what the removal cannot do, the sweep does.
  Result<v1::ReleaseResponse> release_step(uint32_t job_id, uint32_t step_id,
                                           const std::function<void()>& answered_first = {});
  Result<v1::ReleaseResponse> release_job(uint32_t job_id, const std::function<void()>& answered_first = {});
  // No process of the job is left on the node; containerd's own stop and removal, 70 ms a
  // container, is release_job's, after.
  Status end_job_processes(uint32_t job_id) { return containers_.end_job_processes(job_id); }
  Result<v1::ReleaseResponse> remove_named(uint32_t uid, const std::string& name);

 private:
  JobLocks& locks_;
  Containers& containers_;
  StepSessions& sessions_;
  SpareContainers& spares_;
  Metrics& metrics_;
};

}  // namespace crisp
