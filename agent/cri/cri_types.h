// CRI's messages (runtime.v1, protobuf only) under a short name, and the label
// maps crispd selects by: what the pure builders need without gRPC.
#pragma once

#include <map>
#include <string>

#include "cri.pb.h"

namespace crisp {

using Labels = std::map<std::string, std::string>;
namespace cri = runtime::v1;

}  // namespace crisp
