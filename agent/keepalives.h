// Keepalives: one thread for every request under way. Every second it tells each client
// whose request runs that crispd still works on it (every kKeepaliveInterval, or at once
// with a new progress line: a cold pull may take minutes), and it notes a client that left
// (a cancelled step's slurmstepd), whose request is then told to stop waiting. The request
// itself runs on its connection's thread: one thread per request, one for all keepalives.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent/images/pull_waiter.h"
#include "crisp.pb.h"

namespace crisp {

// How long a frame to a client may take to read or write: one that stalls longer is given up.
inline constexpr std::chrono::seconds kConnectionIoTimeout{10};

class Keepalives {
 public:
  // Writes a frame to a client (fd, its pid for the log) within timeout; false: it could not.
  using Sender = std::function<bool(int fd, pid_t pid, const v1::Response& r, std::chrono::seconds timeout)>;

  // One request's side of its connection.
  class Request {
   public:
    Request(int fd, pid_t pid, const Sender& send) : fd_(fd), pid_(pid), send_(send) {}
    // What the request is told (progress) and asks (stop: its client went away).
    PullWaiter waiter();
    // Sends r, the request's answer, unless one was sent already (a release answered first)
    // or the client left; no keepalive follows.
    void answer(const v1::Response& r);
    bool answered();
    // The keepalive thread's turn: a keepalive if one is due.
    void tick();

   private:
    const int fd_;
    const pid_t pid_;
    const Sender& send_;
    std::atomic<bool> gone_{false};
    std::mutex mu_;  // one frame at a time on fd_
    bool done_ = false;
    std::string line_;  // the newest progress line not yet sent
    std::chrono::steady_clock::time_point last_sent_ = std::chrono::steady_clock::now();
  };

  explicit Keepalives(Sender send);
  ~Keepalives();
  Keepalives(const Keepalives&) = delete;
  Keepalives& operator=(const Keepalives&) = delete;

  // The request on fd, kept alive until it is answered.
  std::shared_ptr<Request> watch(int fd, pid_t pid);

 private:
  void loop();

  const Sender send_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<std::shared_ptr<Request>> requests_;
  std::thread thread_;  // last: it uses everything above
};

}  // namespace crisp
