#include "common/client.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "common/strings.h"
#include "common/wire.h"

namespace crisp {

Result<AgentCall> AgentCall::start(const std::string& socket_path, const v1::Request& request,
                                   std::chrono::milliseconds timeout) {
  Deadline deadline(timeout);
  auto addr = unix_address(socket_path);
  if (!addr) return fail("crispd socket path is too long: " + socket_path);

  Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) return fail("socket: " + errno_text(errno));
  // A full backlog (a crispd that does not accept) makes a blocking connect
  // wait for ever; a non-blocking one says EAGAIN, retried until the deadline.
  while (connect(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) < 0) {
    if (errno == EINTR) continue;
    if (errno != EAGAIN)
      return fail(ErrorKind::kUnreachable, "cannot reach crispd at " + socket_path + " (" + errno_text(errno) +
                  "): is crispd running on this node?");
    if (deadline.remaining_ms() == 0)
      return fail(ErrorKind::kTimedOut, "crispd at " + socket_path + " accepts no connection: is it hung? (see its log)");
    usleep(10000);
  }

  std::string out;
  if (!request.SerializeToString(&out)) return fail("cannot encode the request to crispd");
  if (auto s = write_frame(fd.get(), out, deadline); !s) {
    // crispd may have refused the connection, saying why, before it closed it.
    auto said = read_frame(fd.get(), Deadline(std::chrono::milliseconds(100)));
    v1::Response refusal;
    if (said && refusal.ParseFromString(*said) && !refusal.error().empty()) return fail(refusal.error());
    return fail("sending to crispd at " + socket_path + " failed: " + s.error());
  }
  return AgentCall(std::move(fd), deadline, socket_path, timeout);
}

Result<v1::Response> AgentCall::finish(const ProgressSink& progress, std::chrono::milliseconds idle) {
  Fd fd = std::move(fd_);
  v1::Response response;
  for (;;) {
    Deadline quiet(idle);
    const Deadline& next = Deadline::soonest(deadline_, quiet);
    auto in = read_frame(fd.get(), next);
    if (!in) {
      if (in.error_kind() != ErrorKind::kTimedOut)
        return fail("crispd at " + socket_path_ + " dropped the request (" + in.error() + "): see its log");
      auto waited = &next == &deadline_ ? timeout_ : idle;
      return fail(ErrorKind::kTimedOut, "crispd at " + socket_path_ + " did not answer within " +
                  std::to_string(std::chrono::duration_cast<std::chrono::seconds>(waited).count()) +
                  " s: is it hung? (see its log)");
    }
    if (!response.ParseFromString(*in)) return fail("crispd sent a malformed answer");
    if (!response.keepalive()) break;
    if (progress && !response.progress().empty()) progress(response.progress());
  }
  if (!response.error().empty()) return fail(response.error());
  return response;
}

Result<v1::Response> call_agent(const std::string& socket_path, const v1::Request& request,
                                std::chrono::milliseconds timeout, std::chrono::milliseconds idle,
                                const ProgressSink& progress) {
  auto call = AgentCall::start(socket_path, request, timeout);
  if (!call) return call.take_error();
  return call->finish(progress, idle);
}

}  // namespace crisp
