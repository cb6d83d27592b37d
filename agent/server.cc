#include "agent/server.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <utility>
#include <optional>
#include <thread>

#include "agent/images/image_store.h"
#include "agent/metrics/metrics.h"
#include "common/client.h"
#include "common/log.h"
#include "common/slurm_ids.h"
#include "common/strings.h"
#include "common/wire.h"

namespace crisp {
namespace {

v1::Response error_response(const std::string& message) {
  v1::Response r;
  r.set_error(message);
  return r;
}

// The answer of one kind of request: its error, or the value in its field.
template <class T>
v1::Response answer(Result<T> result, T* (v1::Response::*field)()) {
  if (!result) return error_response(result.error());
  v1::Response r;
  *(r.*field)() = std::move(*result);
  return r;
}

}  // namespace

Status Server::listen_on(const std::string& socket_path) {
  auto addr = unix_address(socket_path);
  if (!addr) return addr.take_error();
  listen_fd_.reset(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listen_fd_) return fail("socket: " + errno_text(errno));
  if (unlink(socket_path.c_str()) != 0 && errno != ENOENT)
    return fail("cannot remove the old socket " + socket_path + ": " + errno_text(errno));
  if (bind(listen_fd_.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0)
    return fail("cannot bind " + socket_path + ": " + errno_text(errno));
  if (chmod(socket_path.c_str(), 0666) != 0) return fail("chmod " + socket_path + ": " + errno_text(errno));
  if (listen(listen_fd_.get(), 128) != 0) return fail("listen: " + errno_text(errno));
  return Ok{};
}

void Server::serve(const std::atomic<bool>& stop) {
  while (!stop) {
    struct pollfd p = {listen_fd_.get(), POLLIN, 0};
    int n = poll(&p, 1, 500);
    if (n < 0 && errno != EINTR) {
      log_error("poll on the listening socket: " + errno_text(errno));
      return;
    }
    if (n <= 0) continue;
    Fd fd(accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!fd) {
      if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) log_warn("accept: " + errno_text(errno));
      continue;
    }
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      log_warn("SO_PEERCRED: " + errno_text(errno));
      continue;
    }
    const Peer peer{cred.pid, cred.uid, cred.gid};
    if (auto admitted = admit(peer); !admitted) {
      // Short: the accept loop must not wait on a client that does not read.
      (void)send(fd.get(), error_response(admitted.error()), peer.pid, std::chrono::seconds(0));
      continue;
    }
    active_++;
    try {
      std::thread([this, peer, conn = std::move(fd)]() mutable {
        serve_connection(conn.get(), peer);
        conn.reset();
        slots_.give(peer.uid);
        active_--;
      }).detach();
    } catch (const std::system_error& e) {
      log_error("cannot start a thread for a connection: " + std::string(e.what()));
      slots_.give(peer.uid);
      active_--;
    }
  }
  // Let requests under way finish their CRI calls before the managers go away.
  u_.ends.stop_waiting();
  while (active_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  listen_fd_.reset();
}

Status Server::admit(const Peer& peer) {
  auto denied = slots_.take(peer.uid);
  if (!denied) return Ok{};
  metrics().refused(Refusal::kOverloaded);
  if (!denied->counts.empty() && noise_.may_log())
    log_warn("refused a connection of uid " + std::to_string(peer.uid) + " (pid " + std::to_string(peer.pid) +
             "): " + denied->counts);
  return fail(denied->user_line);
}

void Server::serve_connection(int fd, const Peer& peer) {
  auto frame = read_frame(fd, Deadline(kIoTimeout), peer.uid == 0 ? kMaxFrame : kMaxUserFrame);
  if (!frame) {
    if (frame.error_kind() == ErrorKind::kClosed) return;
    metrics().refused(Refusal::kBadInput);
    if (peer.uid == 0 || noise_.may_log())
      log_warn("reading a request from pid " + std::to_string(peer.pid) + " (uid " + std::to_string(peer.uid) +
               "): " + frame.error());
    return;
  }
  v1::Request req;
  if (!req.ParseFromString(*frame)) {
    metrics().refused(Refusal::kBadInput);
    send(fd, error_response("malformed request"), peer.pid);
    return;
  }
  // The request runs on this thread; keepalives_ tells the client meanwhile that crispd is
  // alive (a cold pull may take minutes), with the pull's progress, and sees it leave.
  auto request = keepalives_.watch(fd, peer.pid);
  auto answered_first = [&] {
    v1::Response accepted;
    accepted.mutable_release();
    request->answer(accepted);
  };
  request->answer(handle_safely(req, peer, request->waiter(), answered_first));
}

v1::Response Server::handle_safely(const v1::Request& req, const Peer& peer, const PullWaiter& waiter,
                                   const std::function<void()>& answered_first) {
  std::string who = "uid " + std::to_string(peer.uid) + " (pid " + std::to_string(peer.pid) + ")";
  try {
    v1::Response r = handle(req, peer, waiter, answered_first);
    if (!r.error().empty() && (peer.uid == 0 || noise_.may_log())) log_info("request of " + who + " failed: " + r.error());
    return r;
  } catch (const std::exception& e) {
    log_error("a request of " + who + " raised an exception: " + e.what());
  } catch (...) {
    log_error("a request of " + who + " raised an exception");
  }
  return error_response("crispd failed on this request (an internal error, logged on the node); tell the admins");
}

bool Server::send(int fd, const v1::Response& resp, pid_t pid, std::chrono::seconds timeout) {
  std::string out;
  resp.SerializeToString(&out);
  if (auto s = write_frame(fd, out, Deadline(timeout)); !s) {
    log_warn("answering pid " + std::to_string(pid) + ": " + s.error());
    return false;
  }
  return true;
}

v1::StatsResponse Server::stats() const {
  const MetricCounts c = u_.metrics.counts();
  v1::StatsResponse s;
  s.set_pulls_started(u_.pulls.started);
  s.set_pulls_merged(u_.pulls.merged);
  s.set_pulls_cached(u_.pulls.cached);
  s.set_steps_created(c.steps_created);
  s.set_steps_released(c.steps_released);
  s.set_swept(c.swept);
  s.set_pulls_failed(u_.pulls.failed);
  s.set_pulls_stalled(u_.pulls.stalled);
  s.set_prefetches(c.prefetches);
  s.set_prefetch_pulls(c.prefetch_pulls);
  s.set_spares_made(c.spares_made);
  s.set_spares_claimed(c.spares_claimed);
  s.set_spares_passed_over(c.spares_passed_over);
  s.set_spares_removed(c.spares_removed);
  s.set_spares_ready(u_.spares.ready());
  s.set_spares_making(u_.spares.making());
  return s;
}

v1::Response Server::handle(const v1::Request& req, const Peer& peer, const PullWaiter& waiter,
                            const std::function<void()>& answered_first) {
  auto root_only = [&](const char* what) -> std::optional<v1::Response> {
    if (peer.uid == 0) return std::nullopt;
    metrics().refused(Refusal::kNotRoot);
    log_warn("refused " + std::string(what) + " from uid " + std::to_string(peer.uid) + " (pid " +
             std::to_string(peer.pid) + ")");
    return error_response(std::string(what) + " is reserved to root (slurmstepd): permission denied");
  };
  switch (req.kind_case()) {
    case v1::Request::kCreateStep:
      if (auto r = root_only("creating a container")) return *r;
      return answer(u_.creator.create(req.create_step(), waiter), &v1::Response::mutable_create_step);
    case v1::Request::kReleaseStep:
      if (auto r = root_only("releasing a step")) return *r;
      return answer(u_.ends.release_step(req.release_step().job_id(), req.release_step().step_id(), answered_first),
                    &v1::Response::mutable_release);
    case v1::Request::kSaveStep:
      if (auto r = root_only("saving a container")) return *r;
      return answer(u_.saver.save(req.save_step()), &v1::Response::mutable_save_step);
    case v1::Request::kImport:
      // Any user, into their own file, with their own registry credentials.
      return answer(u_.importer.import(peer.uid, peer.gid, req.import().image(), req.import().path(), waiter),
                    &v1::Response::mutable_import);
    case v1::Request::kRemoveNamed: {
      // A user's own containers only; root may name anyone's.
      const v1::RemoveNamedRequest& rm = req.remove_named();
      uint32_t uid = peer.uid == 0 ? rm.uid() : peer.uid;
      if (rm.name().empty() && rm.spares()) {
        v1::ReleaseResponse out;
        out.set_removed_containers(u_.spares.remove(peer.uid == 0 && rm.all_users() ? std::nullopt : std::optional(uid)));
        return answer(Result<v1::ReleaseResponse>(out), &v1::Response::mutable_release);
      }
      return answer(u_.ends.remove_named(uid, rm.name()), &v1::Response::mutable_release);
    }
    case v1::Request::kReleaseJob:
      if (auto r = root_only("releasing a job")) return *r;
      return answer(u_.ends.release_job(req.release_job().job_id(), answered_first), &v1::Response::mutable_release);
    case v1::Request::kList:
      // A user sees only their own jobs' containers.
      return answer(u_.containers.list(req.list().job_id(), peer.uid == 0 ? -1 : static_cast<int64_t>(peer.uid)),
                    &v1::Response::mutable_list);
    case v1::Request::kPull:
      if (auto r = root_only("pulling an image")) return *r;
      return answer(u_.images.pull(req.pull(), waiter), &v1::Response::mutable_pull);
    case v1::Request::kPrefetch:
      if (auto r = root_only("prefetching an image")) return *r;
      return answer(u_.images.prefetch(req.prefetch()), &v1::Response::mutable_prefetch);
    case v1::Request::kStats:
      return answer(Result<v1::StatsResponse>(stats()), &v1::Response::mutable_stats);
    case v1::Request::KIND_NOT_SET:
      break;
  }
  metrics().refused(Refusal::kBadInput);
  return error_response("unknown request (crispd is older than its client?)");
}

}  // namespace crisp
