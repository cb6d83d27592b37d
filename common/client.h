// The synchronous client of crispd used by the plugin and crispctl: no threads,
// no gRPC, one connection per call, bounded by a timeout.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "common/fd.h"
#include "common/layout.h"
#include "common/deadline.h"
#include "common/result.h"
#include "crisp.pb.h"

namespace crisp {

// crispd sends a keepalive at least this often while it works on a request.
inline constexpr std::chrono::seconds kKeepaliveInterval{5};
// Silence longer than this means crispd is hung, whatever the request's timeout.
inline constexpr std::chrono::seconds kIdleTimeout{15};

// A keepalive's progress line, as crispd sends it (pulls).
using ProgressSink = std::function<void(const std::string& line)>;

// One request to crispd, sent now and answered later: slurmstepd sends a step's
// request as root in init_post_opt and waits for it in user_init, when the
// step's stderr reaches the user (progress lines) and srun is past its launch.
class AgentCall {
 public:
  // Errors are user-facing lines (without the "crisp:" prefix). timeout bounds
  // the whole call, from now.
  static Result<AgentCall> start(const std::string& socket_path, const v1::Request& request,
                                 std::chrono::milliseconds timeout);
  // crispd's answer, or the error it answered with; idle bounds the silence between its frames.
  Result<v1::Response> finish(const ProgressSink& progress = {}, std::chrono::milliseconds idle = kIdleTimeout);

 private:
  AgentCall(Fd fd, Deadline deadline, std::string socket_path, std::chrono::milliseconds timeout)
      : fd_(std::move(fd)), deadline_(deadline), socket_path_(std::move(socket_path)), timeout_(timeout) {}
  Fd fd_;
  Deadline deadline_;
  std::string socket_path_;
  std::chrono::milliseconds timeout_;
};

// start and finish at once.
Result<v1::Response> call_agent(const std::string& socket_path, const v1::Request& request,
                                std::chrono::milliseconds timeout,
                                std::chrono::milliseconds idle = kIdleTimeout, const ProgressSink& progress = {});

}  // namespace crisp
