// StepEnds: the end of a step, of a job (its processes first, what its epilog waits for,
// then its containers) and of a named container a user removes. A removal no one waits
// for waits for steps being launched: see release_step. Calls: JobLocks, Containers,
// StepSessions, StepWork (the spare maker waits for removals, removals for creates), Metrics.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "agent/steps/containers.h"
#include "agent/steps/job_locks.h"
#include "agent/steps/step_sessions.h"
#include "agent/steps/step_work.h"
#include "crisp.pb.h"

namespace crisp {

class Metrics;

class StepEnds {
 public:
  StepEnds(JobLocks& locks, Containers& containers, StepSessions& sessions, StepWork& work, Metrics& metrics)
      : locks_(locks), containers_(containers), sessions_(sessions), work_(work), metrics_(metrics) {}

  // A release may be answered before containerd's stop and removal, 70 ms a container:
  // a step's end (and so srun) need not wait for them, nor a job's epilog (and so the
  // node's next job), which waits only until no process of the job is left. answered_first,
  // if given, is called once the caller may be told; what the removal cannot do, the sweep does.
  // A removal so answered first waits, 10 s at most, until no step's container is being
  // made nor was a moment ago (StepWork): the holder's exit costs containerd's shim a `runc
  // kill --all` and the removal a `runc delete`, CPU a step being launched beside it would
  // wait for on a small node (a burst of steps whose first ones end while its last start; a
  // burst of jobs whose first ones end so). A job's end gives back what its containers held
  // on the host (end_job_processes) before it is answered, and removes them after the wait.
  Result<v1::ReleaseResponse> release_step(uint32_t job_id, uint32_t step_id,
                                           const std::function<void()>& answered_first = {});
  Result<v1::ReleaseResponse> release_job(uint32_t job_id, const std::function<void()>& answered_first = {});
  // No process of the job is left on the node; containerd's own stop and removal, 70 ms a
  // container, is release_job's, after.
  Status end_job_processes(uint32_t job_id) { return containers_.end_job_processes(job_id); }
  Result<v1::ReleaseResponse> remove_named(uint32_t uid, const std::string& name);
  // crispd stops: removals waiting for launches go now.
  void stop_waiting() { work_.stop_waiting(); }

 private:
  // Waits for steps being launched, as said above, if they are; then the ids of the
  // containers selector named before the wait, the only ones to remove, what they held on
  // the host given back already (nullopt: no wait).
  using OnlyIds = std::optional<std::set<std::string>>;
  Result<OnlyIds> after_launches(const Labels& selector);
  // The containers selector names, those in only alone where it is given.
  Result<std::vector<cri::Container>> to_remove(const Labels& selector, const OnlyIds& only);
  // What the removal does with the host's parts: after a wait, after_launches gave them back.
  static Containers::Host host_after(const OnlyIds& only);

  JobLocks& locks_;
  Containers& containers_;
  StepSessions& sessions_;
  StepWork& work_;
  Metrics& metrics_;
};

}  // namespace crisp
