// crispd's Unix-socket server: one request per connection, each on its own
// thread, with the caller identified by SO_PEERCRED.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "agent/connection_slots.h"
#include "agent/images/pull_waiter.h"
#include "agent/keepalives.h"
#include "agent/log_throttle.h"
#include "agent/steps/containers.h"
#include "agent/steps/image_importer.h"
#include "agent/steps/image_requests.h"
#include "agent/steps/spare_containers.h"
#include "agent/steps/step_creator.h"
#include "agent/steps/step_ends.h"
#include "agent/steps/step_saver.h"
#include "common/fd.h"
#include "crisp.pb.h"

namespace crisp {

class Metrics;
struct PullCounters;

struct Peer {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

// The units crispd's requests go to: the server authorizes, then calls the one that does it.
struct ServedUnits {
  StepCreator& creator;
  StepEnds& ends;
  Containers& containers;
  StepSaver& saver;
  ImageImporter& importer;
  ImageRequests& images;
  SpareContainers& spares;
  const PullCounters& pulls;
  Metrics& metrics;
};

class Server {
 public:
  explicit Server(ServedUnits units) : u_(units) {}

  // Binds socket_path (mode 0666: every user may list their own jobs).
  Status listen_on(const std::string& socket_path);
  // Serves until stop is set (checked every poll tick).
  void serve(const std::atomic<bool>& stop);

  // Authorization and dispatch; public for the tests of its rules. waiter: what
  // a request waiting on a pull tells its client and asks of it.
  // answered_first: sends a release's answer before its removal is done (StepEnds).
  v1::Response handle(const v1::Request& req, const Peer& peer, const PullWaiter& waiter = {},
                      const std::function<void()>& answered_first = {});
  // handle(), and any exception it lets out answered as one line and logged:
  // no input may end a connection's thread, let alone crispd.
  v1::Response handle_safely(const v1::Request& req, const Peer& peer, const PullWaiter& waiter = {},
                             const std::function<void()>& answered_first = {});

  // A user's request is small (list, stats, remove-named); root's carry a job's environment.
  static constexpr size_t kMaxUserFrame = 64 << 10;

 private:
  // Takes a connection slot for peer, or says why there is none.
  Status admit(const Peer& peer);
  void serve_connection(int fd, const Peer& peer);
  v1::StatsResponse stats() const;
  Metrics& metrics() const { return u_.metrics; }
  static constexpr std::chrono::seconds kIoTimeout = kConnectionIoTimeout;
  bool send(int fd, const v1::Response& resp, pid_t pid, std::chrono::seconds timeout = kIoTimeout);

  const ServedUnits u_;
  Fd listen_fd_;
  std::atomic<int> active_{0};
  ConnectionSlots slots_;
  // What a user can make happen at will is logged at most 20 lines in 10 s; the rest counted.
  LogThrottle noise_{20, std::chrono::seconds(10)};
  Keepalives keepalives_{[this](int fd, pid_t pid, const v1::Response& r, std::chrono::seconds timeout) {
    return send(fd, r, pid, timeout);
  }};
};

}  // namespace crisp
