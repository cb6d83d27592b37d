// The synchronous client of crispd used by the plugin and crispctl: no threads,
// no gRPC, one connection per call, bounded by a timeout.
#pragma once

#include <chrono>
#include <string>

#include "common/result.h"
#include "crisp.pb.h"

namespace crisp {

inline constexpr const char* kDefaultSocket = "/run/crisp/crispd.sock";

// Errors are user-facing lines (without the "crisp:" prefix), including an
// error crispd itself answered with.
Result<v1::Response> call_agent(const std::string& socket_path, const v1::Request& request,
                                std::chrono::milliseconds timeout);

}  // namespace crisp
