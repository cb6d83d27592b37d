// --container-remap-root where the step's keeper has no user namespace to
// enter: an unprivileged user namespace of the task's own, mapping the user to 0.
#pragma once

#include <cstdint>

#include "common/result.h"

namespace crisp {

Status remap_to_root(uint32_t uid, uint32_t gid);

}  // namespace crisp
