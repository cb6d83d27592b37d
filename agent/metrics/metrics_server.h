// The HTTP endpoint Prometheus scrapes (prometheus-cpp's exposer, civetweb):
// GET /metrics on the address given, from its own two threads, never crispd's.
// It serves counts only (no user, job or image names): loopback by default,
// the node's address for a site's Prometheus. Any local user may connect: one who
// holds connections open stalls the metrics (not crispd's work, which has its own
// threads) until a firewall rule keeps users off the port (admin guide, Monitoring).
#pragma once

#include <memory>
#include <string>

#include "agent/metrics/metrics.h"
#include "common/result.h"

namespace prometheus {
class Exposer;
}

namespace crisp {

class MetricsServer {
 public:
  // address: host:port ("127.0.0.1:9464", "[::1]:9464", "10.0.0.5:9464").
  static Result<std::unique_ptr<MetricsServer>> start(const std::string& address, const Metrics& metrics);
  ~MetricsServer();

 private:
  explicit MetricsServer(std::unique_ptr<prometheus::Exposer> exposer);
  std::unique_ptr<prometheus::Exposer> exposer_;
};

// crispd's own resident memory and open descriptors, from /proc/self.
double resident_bytes();
double open_descriptors();

}  // namespace crisp
