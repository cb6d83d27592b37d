// The step's own paths (mount sources, $HOME, the working directory), resolved with the
// user's credentials: what they name must be theirs to reach. The "paths" phase of a create.
// Calls: agent/host/user_access.h.
#pragma once

#include "agent/steps/step_plan.h"

namespace crisp {

// A bind mount of the step's container.
v1::BindMount bind_mount(const std::string& source, const std::string& target, bool readonly);
// A fresh tmpfs of the user's at target (options checked by the host phase).
v1::BindMount tmpfs_mount(const std::string& target, const std::string& options);

Status resolve_user_paths(const v1::CreateStepRequest& req, StepPlan& plan);

// An enroot image's /etc/fstab (enroot's doc/image-format.md; the job's ${NAME} substituted):
// its bind mounts, read-write unless "ro", with sources resolved as the user's own mounts are
// (the image is theirs: it gets nothing they could not mount themselves), and its tmpfs
// mounts. A missing source fails the step unless "nofail"; so does a line crisp cannot apply.
inline constexpr size_t kMaxImageMounts = 128;
Status add_image_mounts(const std::string& fstab, const std::string& image, StepPlan& plan);

}  // namespace crisp
