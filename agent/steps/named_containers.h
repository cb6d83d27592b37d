// NamedContainers: finding the container a step joins instead of making one: a named
// container (--container-name) of the job or, for a global name, of the user, or a running
// unnamed step's by its JOBID.STEPID, as Pyxis names them; and joining it. Call with the
// job's whole lock held. Calls: containerd's CRI, Containers, StepSessions,
// ContainerStarter (the holder), ImageStore (a joined image's config).
#pragma once

#include <optional>
#include <string>

#include "agent/cri/cri_types.h"
#include "agent/steps/container_start.h"
#include "agent/steps/containers.h"
#include "agent/steps/step_sessions.h"

namespace crisp {

class ImageStore;

class CriClient;

class NamedContainers {
 public:
  NamedContainers(CriClient& cri, Containers& containers, StepSessions& sessions, ContainerStarter& starter,
                  ImageStore& store)
      : cri_(cri), containers_(containers), sessions_(sessions), starter_(starter), store_(store) {}

  // The step joined to the container req names in scope; nullopt: none exists, make one.
  Result<std::optional<v1::CreateStepResponse>> join(const JobIdentity& scope, const v1::CreateStepRequest& req);

 private:
  // The running container of that name and user in scope (job, or 0: global); others of
  // that name are leftovers and removed.
  Result<std::optional<cri::Container>> find_named(const JobIdentity& scope, const std::string& name);
  // JOBID.STEPID: a running unnamed step's container, the user's own.
  Result<std::optional<cri::Container>> find_step_container(uint32_t uid, const std::string& name);
  Result<v1::CreateStepResponse> join_container(const cri::Container& c, const v1::CreateStepRequest& req);

  CriClient& cri_;
  Containers& containers_;
  StepSessions& sessions_;
  ContainerStarter& starter_;
  ImageStore& store_;
};

}  // namespace crisp
