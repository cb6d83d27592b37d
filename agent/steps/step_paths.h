// The step's own paths (mount sources, $HOME, the working directory), resolved with the
// user's credentials: what they name must be theirs to reach. The "paths" phase of a create.
// Calls: agent/host/user_access.h.
#pragma once

#include "agent/steps/step_plan.h"

namespace crisp {

// A bind mount of the step's container.
v1::BindMount bind_mount(const std::string& source, const std::string& target, bool readonly);

Status resolve_user_paths(const v1::CreateStepRequest& req, StepPlan& plan);

}  // namespace crisp
