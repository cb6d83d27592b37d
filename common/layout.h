// Paths that crispd and the plugin must agree on.
#pragma once

namespace crisp {

// Where crisp-holder appears inside every container (bind-mounted read-only).
inline constexpr const char* kHolderTarget = "/.crisp/holder";

}  // namespace crisp
