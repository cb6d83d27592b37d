// containerd's pull errors as lines that tell the user what to fix. Pure.
#pragma once

#include <string>

namespace crisp {

// containerd answers a failed PullImage with gRPC's UNKNOWN and its own text;
// the text is all there is to tell a missing image from a refused login.
std::string explain_pull_error(const std::string& ref, const std::string& cri_error);

}  // namespace crisp
