// The mounts a task changes in the step's container once it has joined it,
// which CRI cannot make: a host directory carried in after the container was
// made, and unbindable propagation.
#pragma once

#include <string>

#include "common/fd.h"
#include "common/result.h"

namespace crisp {

// A host directory carried into the container after it was made (PMIx's
// server directory appears only once slurmstepd forks the tasks): cloned in
// the host's mount namespace, then attached at the same path once inside.
Result<Fd> clone_host_tree(const std::string& path);
Status attach_tree(int tree_fd, const std::string& target);

// The mount at target inside the container made unbindable (CRI has no such
// propagation); recursive: the mounts under it too. Reached through no symlink.
Status make_unbindable(const std::string& target, bool recursive);

}  // namespace crisp
