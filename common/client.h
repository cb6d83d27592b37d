// The synchronous client of crispd used by the plugin and crispctl: no threads,
// no gRPC, one connection per call, bounded by a timeout.
#pragma once

#include <chrono>
#include <string>

#include "common/layout.h"
#include "common/result.h"
#include "crisp.pb.h"

namespace crisp {

// crispd sends a keepalive at least this often while it works on a request.
inline constexpr std::chrono::seconds kKeepaliveInterval{5};
// Silence longer than this means crispd is hung, whatever the request's timeout.
inline constexpr std::chrono::seconds kIdleTimeout{15};

// Errors are user-facing lines (without the "crisp:" prefix), including an
// error crispd itself answered with. timeout bounds the whole call, idle the
// silence between crispd's frames.
Result<v1::Response> call_agent(const std::string& socket_path, const v1::Request& request,
                                std::chrono::milliseconds timeout,
                                std::chrono::milliseconds idle = kIdleTimeout);

}  // namespace crisp
