// crispd's side of the metrics endpoint. Any local user may connect to a metrics port,
// so the HTTP server (civetweb) runs in a process of its own, crisp-metrics-relay, as
// nobody with no privileges: crispd starts it with one end of a socket pair, answers
// each of its questions with the text prometheus-cpp serializes, and starts it again if
// it exits. The text carries counts only (no user, job or image names).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "agent/metrics/metrics.h"
#include "common/fd.h"
#include "common/result.h"

namespace crisp {

struct RelaySettings {
  std::string address;  // host:port ("127.0.0.1:9474", "[::1]:9474", "10.0.0.5:9474")
  std::string relay;    // crisp-metrics-relay
  std::string user = "nobody";  // whom it runs as
};

class MetricsServer {
 public:
  // Checks what can be checked before the relay runs (the program, the user); the relay's
  // own failures (a port in use) are logged and it is tried again, backing off to a minute.
  static Result<std::unique_ptr<MetricsServer>> start(RelaySettings settings, const Metrics& metrics);
  // The relay is ended and waited for.
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

 private:
  MetricsServer(RelaySettings settings, uint32_t uid, uint32_t gid, const Metrics& metrics, Fd stop);
  struct Relay {
    pid_t pid = -1;
    Fd pidfd, socket;
  };
  Result<Relay> spawn();
  // Answers the relay until it exits, misbehaves, or crispd stops; true: crispd stops.
  bool serve(const Relay& relay);
  // The relay ended (asked to, if it still runs) and reaped: how it ended, for the log.
  std::string reap(Relay& relay);
  void supervise();

  RelaySettings settings_;
  uint32_t uid_, gid_;
  const Metrics& metrics_;
  Fd stop_;  // an eventfd: crispd stops
  std::thread thread_;
};

// crispd's own resident memory and open descriptors, from /proc/self.
double resident_bytes();
double open_descriptors();

}  // namespace crisp
