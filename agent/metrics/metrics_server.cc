#include "agent/metrics/metrics_server.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <prometheus/exposer.h>

namespace crisp {

MetricsServer::MetricsServer(std::unique_ptr<prometheus::Exposer> exposer) : exposer_(std::move(exposer)) {}
MetricsServer::~MetricsServer() = default;

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string& address, const Metrics& metrics) {
  // Two threads serve every scraper; a connection that sends no request is cut after 2 s.
  std::vector<std::string> options = {"listening_ports", address, "num_threads", "2", "request_timeout_ms", "2000"};
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(options);
  } catch (const std::exception& e) {
    return fail("cannot serve metrics on " + address + " (" + e.what() + "): is the port in use? (--metrics-address)");
  }
  for (const auto& c : metrics.collectables()) exposer->RegisterCollectable(c);
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(exposer)));
}

double resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  double size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<double>(sysconf(_SC_PAGESIZE));
}

double open_descriptors() {
  std::error_code ec;
  double n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) n++;
  return ec || n == 0 ? 0 : n - 1;  // the directory's own
}

}  // namespace crisp
