// The /sys/class/infiniband a step sees when it gets only some of the node's
// HCAs: a host directory holding the class directory's entries for those HCAs
// (the same relative symlinks), mounted read-only over it.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace crisp {

Status make_hca_view(const std::string& class_dir, const std::vector<std::string>& hca_names, const std::string& dir);
// Removes what make_hca_view made.
void remove_hca_view(const std::string& dir);

}  // namespace crisp
