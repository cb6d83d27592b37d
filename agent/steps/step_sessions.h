// StepSessions: the steps running in each container and their sessions (a step's own
// namespaces, agent/host/step_session.h): what a step attaching to a running container
// joins, as Pyxis's attach does. Calls: the session starter and process ender it is given.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/host/step_session.h"
#include "agent/steps/holders.h"
#include "crisp.pb.h"

namespace crisp {

// Starts a step's namespace keeper (step_session.h's start_session; a seam for the fake CRI's tests).
using SessionStarter = std::function<Result<SessionKeeper>(const SessionRequest&)>;

class StepSessions {
 public:
  // shm_size: the size= of a private /dev/shm (--container-unshare=ipc).
  StepSessions(SessionStarter start, ProcessEnder end, std::string shm_size)
      : start_(std::move(start)), end_(std::move(end)), shm_size_(std::move(shm_size)) {}

  // A new step in the container: its own namespaces if it needs any (remap-root,
  // --container-unshare), noted as running; its session in out.
  Status start(const std::string& container_id, int holder_pid, const v1::CreateStepRequest& req,
               v1::CreateStepResponse& out);
  // A step joining the container: the running step's session, or a new one.
  Status enter(const std::string& container_id, int holder_pid, const v1::CreateStepRequest& req,
               v1::CreateStepResponse& out);
  // Whether a step still runs in the container.
  bool any_running(const std::string& container_id);
  // At a step's, its job's or its container's end: the sessions they own end.
  void forget_step(uint32_t job_id, uint32_t step_id);
  void forget_job(uint32_t job_id);
  void forget_container(const std::string& container_id);

 private:
  // A step using a container while its slurmstepd runs.
  struct RunningStep {
    uint32_t job_id = 0, step_id = 0;
    int stepd_pid = 0;
    uint64_t stepd_start = 0;
    std::shared_ptr<SessionKeeper> keeper;  // null: the container's own namespaces
    bool owns_keeper = false, userns = false;
    uint32_t unshare = 0;
  };
  // The newest of the container's steps still running, if any (the others are forgotten).
  std::optional<RunningStep> newest(const std::string& container_id);
  Status note(const std::string& container_id, const v1::CreateStepRequest& req, RunningStep step,
              v1::CreateStepResponse& out);
  void forget_where(const std::function<bool(const std::string&, const RunningStep&)>& which);

  const SessionStarter start_;
  const ProcessEnder end_;
  const std::string shm_size_;
  std::mutex mu_;
  std::map<std::string, std::vector<RunningStep>> running_;  // by container id
};

}  // namespace crisp
