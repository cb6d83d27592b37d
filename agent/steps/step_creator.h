// StepCreator: a step's container, made (or joined, for a named container, or claimed,
// from the spares) in named phases: join, paths, devices, image, host, claim or sandbox
// and create, start, holder, rootfs, entrypoint, session. What a phase makes is owned by
// an RAII object (HostArtifacts, ContainerGuard), so any failure undoes everything before
// the error is answered. Calls: every unit below it (JobLocks to ContainerStarter, the
// phases StepDevices, StepImage, StepHost, NamedContainers, SpareContainers), StepWork, Metrics.
#pragma once

#include <optional>

#include "agent/steps/container_start.h"
#include "agent/steps/containers.h"
#include "agent/steps/holders.h"
#include "agent/steps/job_locks.h"
#include "agent/steps/named_containers.h"
#include "agent/steps/spare_containers.h"
#include "agent/steps/step_devices.h"
#include "agent/steps/step_host.h"
#include "agent/steps/step_image.h"
#include "agent/steps/step_sessions.h"
#include "agent/steps/step_work.h"
#include "agent/steps/step_site.h"
#include "agent/steps/user_sandboxes.h"

namespace crisp {

class Metrics;
enum class SetupKind;

// The units a create goes through.
struct CreatorParts {
  JobLocks& locks;
  UserSandboxes& sandboxes;
  Containers& containers;
  StepSessions& sessions;
  Holders& holders;
  ContainerStarter& starter;
  NamedContainers& named;
  SpareContainers& spares;
  StepWork& work;
  StepDevices& devices;
  StepImage& image;
  StepHost& host;
  StepSite& site;
};

class StepCreator {
 public:
  StepCreator(CreatorParts parts, NodeSettings node, Metrics& metrics)
      : p_(parts), node_(std::move(node)), metrics_(metrics) {}

  // Makes (or joins, for a named container) the step's container; on any failure nothing
  // it made is left. waiter: the request's (progress lines, the client gone); a pull is
  // also left when slurmctld says the step is over.
  Result<v1::CreateStepResponse> create(const v1::CreateStepRequest& req, const PullWaiter& waiter = {});

 private:
  // busy: the step's launch under way, for StepWork (not while its image is pulled).
  Result<v1::CreateStepResponse> create_in_phases(const v1::CreateStepRequest& req, const PullWaiter& waiter,
                                                  PhaseClock& clock, std::optional<StepWork::Busy>& busy);
  // The job's lock for the rest of the create: whole for a named container, which may have
  // been made by another step meanwhile (then joined: answer set), shared for an unnamed one.
  struct JobHold {
    std::optional<WholeLock> whole;
    std::optional<SharedLock> shared;
    std::optional<v1::CreateStepResponse> joined;
  };
  Result<JobHold> hold_job(const v1::CreateStepRequest& req, const StepPlan& plan);
  Result<std::string> make_container(const v1::CreateStepRequest& req, StepPlan& plan, PhaseClock& clock);
  // An unnamed step's leftover container of the same name (a crispd restarted mid-step, a
  // requeued job's): removed; whether there was one.
  bool remove_stale_step(const v1::CreateStepRequest& req);
  // The container started (its holder at started, process_start_time): its session, the
  // holder kept, the answer.
  Status start_session(const v1::CreateStepRequest& req, StepPlan& plan, uint64_t started, PhaseClock& clock);
  // A named container joined: the site's hooks for this step too, then finish.
  Result<v1::CreateStepResponse> finish_join(const v1::CreateStepRequest& req, v1::CreateStepResponse joined,
                                             const JobSite& site, PhaseClock& clock);
  // The answer, with the site's environment and the hooks', its setup time logged and counted.
  v1::CreateStepResponse finish(const v1::CreateStepRequest& req, v1::CreateStepResponse out, const JobSite& site,
                                const std::vector<std::string>& hook_env, SetupKind kind, PhaseClock& clock,
                                bool named = false);

  CreatorParts p_;
  const NodeSettings node_;
  Metrics& metrics_;
};

}  // namespace crisp
