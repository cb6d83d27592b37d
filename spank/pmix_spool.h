// Where Slurm's PMIx plugin makes a step's server directory: under slurmd's
// spool directory (%n and %h expanded), which SPANK has no item for. The
// plugin's own socket, <spool>/stepd.slurm.pmix.<job>.<step>, listed in
// /proc/net/unix and held by this task's slurmstepd (any user may bind one of
// that name), tells. The parsing is pure, for the unit tests; the reads are thin.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "common/result.h"

namespace crisp {

// The inode of a "socket:[N]" link (a /proc/PID/fd entry's target); nullopt for any other.
std::optional<std::string> socket_inode(std::string_view link);

// The spool directory in /proc/net/unix's text: the path of the step's socket
// among those whose inode is in held.
Result<std::string> spool_dir_in(const std::string& unix_table, const std::set<std::string>& held, uint32_t job_id,
                                 uint32_t step_id);

// The same from /proc: among the sockets this task's parent, its slurmstepd, holds.
Result<std::string> pmix_spool_dir(uint32_t job_id, uint32_t step_id);

}  // namespace crisp
