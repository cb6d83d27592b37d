// What a spare container lacks of the one a job's step would get: the mounts
// and device nodes to add inside it once the step claims it. Both configs come
// from build_step_container, so the job sees exactly what a container made for
// it would show. Pure: no I/O.
#pragma once

#include <vector>

#include "agent/cri/cri_types.h"
#include "common/result.h"

namespace crisp {

struct ClaimPlan {
  std::vector<cri::Mount> mounts;  // in the job's config order, as runc would mount them
  std::vector<cri::Device> devices;
};

// An error (kind kUnsupported, its text for the log) when the spare differs from
// the job's container in anything but what a claim adds: the image, the user,
// the command, the environment, a read-only root, a mount's propagation. The
// holder's supplementary groups are not compared: tasks take Slurm's, never the holder's.
Result<ClaimPlan> plan_claim(const cri::ContainerConfig& job, const cri::ContainerConfig& spare);

}  // namespace crisp
