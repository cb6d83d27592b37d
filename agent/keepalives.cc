#include "agent/keepalives.h"

#include <poll.h>

#include <algorithm>
#include <utility>

#include "common/client.h"

namespace crisp {
namespace {

// The peer closed its end (a slurmstepd that ended), without reading anything.
bool peer_hung_up(int fd) {
  struct pollfd p = {fd, POLLRDHUP, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

// A keepalive is a few bytes and the client reads all the time: one that takes longer than
// this is a client that stopped reading, and must not hold up the others'.
constexpr std::chrono::seconds kKeepaliveSendTimeout{1};

}  // namespace

PullWaiter Keepalives::Request::waiter() {
  PullWaiter w;
  w.stop = [this]() -> std::optional<std::string> {
    if (gone_) return "its client went away";
    return std::nullopt;
  };
  w.progress = [this](const std::string& line) {
    std::lock_guard lock(mu_);
    line_ = line;
  };
  return w;
}

void Keepalives::Request::answer(const v1::Response& r) {
  std::lock_guard lock(mu_);
  if (done_) return;
  done_ = true;
  if (!gone_) (void)send_(fd_, pid_, r, kConnectionIoTimeout);
}

bool Keepalives::Request::answered() {
  std::lock_guard lock(mu_);
  return done_;
}

void Keepalives::Request::tick() {
  std::lock_guard lock(mu_);
  if (done_ || gone_) return;
  if (peer_hung_up(fd_)) {
    gone_ = true;
    return;
  }
  auto now = std::chrono::steady_clock::now();
  if (line_.empty() && now - last_sent_ < kKeepaliveInterval) return;
  v1::Response keepalive;
  keepalive.set_keepalive(true);
  keepalive.set_progress(std::exchange(line_, ""));
  last_sent_ = now;
  if (!send_(fd_, pid_, keepalive, kKeepaliveSendTimeout)) gone_ = true;  // the request still completes
}

Keepalives::Keepalives(Sender send) : send_(std::move(send)) {
  thread_ = std::thread([this] { loop(); });
}

Keepalives::~Keepalives() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::shared_ptr<Keepalives::Request> Keepalives::watch(int fd, pid_t pid) {
  auto request = std::make_shared<Request>(fd, pid, send_);
  std::lock_guard lock(mu_);
  requests_.push_back(request);
  return request;
}

void Keepalives::loop() {
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; })) {
    std::erase_if(requests_, [](const std::shared_ptr<Request>& r) { return r->answered(); });
    std::vector<std::shared_ptr<Request>> now = requests_;
    lock.unlock();
    for (const auto& r : now) r->tick();
    lock.lock();
  }
}

}  // namespace crisp
