// StepSaver: --container-save, the container's root filesystem written as a squashfs
// where the user asked, with their rights alone. Calls: containerd's CRI, agent/host/
// (the container's mount namespace, mksquashfs as the user).
#pragma once

#include "agent/cri/cri_types.h"
#include "agent/host/squashfs_tools.h"
#include "crisp.pb.h"

namespace crisp {

class CriClient;

class StepSaver {
 public:
  // bounds: mksquashfs's cgroup and time limit.
  StepSaver(CriClient& cri, SquashfsBounds bounds) : cri_(cri), bounds_(bounds) {}
  Result<v1::SaveStepResponse> save(const v1::SaveStepRequest& req);

 private:
  CriClient& cri_;
  const SquashfsBounds bounds_;
};

}  // namespace crisp
