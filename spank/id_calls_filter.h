// enroot's seccomp filter, which Pyxis installs in every unprivileged task:
// the calls that cannot take effect for a process of one uid (chown to
// another owner, setuid and its kin, setgroups) answer 0 without effect, so
// package managers and tools that drop privileges go on as enroot lets them.
#pragma once

#include "common/result.h"

namespace crisp {

// Installs it in the calling task (after which it execs the user's command).
Status fake_id_calls();

}  // namespace crisp
