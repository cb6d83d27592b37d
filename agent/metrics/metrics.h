// crispd's Prometheus metrics (prometheus-cpp): what is counted as it happens
// (setup times by phase and kind, pulls, refusals, sweep removals), and values
// read when Prometheus scrapes (add_scraped: counters crispd keeps anyway,
// containers present, memory, descriptors, containerd's health). No label
// carries a user, job or image: a node's series stay few whatever its users do.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace crisp {

// How a step got its container.
enum class SetupKind { kNew, kNamedJoin, kSpareClaim };
// Why crispd refused a request before doing it.
enum class Refusal { kNotRoot, kOverloaded, kBadInput };
// What became of a spare container.
enum class SpareEvent { kMade, kClaimed, kPassedOver, kRemoved };

// The counters `crispctl stats` shows, read back from the metrics (one count of each thing).
struct MetricCounts {
  uint64_t steps_created = 0, steps_released = 0, swept = 0;
  uint64_t prefetches = 0, prefetch_pulls = 0;
  uint64_t spares_made = 0, spares_claimed = 0, spares_passed_over = 0, spares_removed = 0;
};

// One value read at scrape time, with its labels (name, value).
struct ScrapedValue {
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
};
enum class ScrapedType { kCounter, kGauge };

class Metrics {
 public:
  Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // A step's container: each phase's time, then the whole setup's.
  void setup_phase(SetupKind kind, std::string_view phase, double seconds);
  void setup_done(SetupKind kind, double seconds);
  // A setup that failed in phase (the image, the host, runc's start ...); one whose step or
  // client went first is counted apart, as not the node's failure.
  void setup_failed(std::string_view phase);
  void setup_cancelled();
  // A pull crispd started: its end. reason: "" when it succeeded, else why not.
  void pull_ended(std::string_view reason, double seconds, double bytes);
  void refused(Refusal why);
  void released();
  // A job prolog's prefetch; pulling: it started (or joined) a pull, the image was not there.
  void prefetched(bool pulling);
  void spare(SpareEvent event);
  void swept(std::string_view cause, uint64_t n = 1);
  // What containerd holds of crispd's, as the last sweep saw it: containers by kind
  // (step, named, spare), and the users' sandboxes.
  void present(const std::map<std::string, double>& containers, double sandboxes);

  // A family whose values are read when Prometheus scrapes (crispd's own counters and
  // gauges, kept elsewhere); read must not block.
  void add_scraped(std::string name, std::string help, ScrapedType type, std::function<std::vector<ScrapedValue>()> read);

  // Everything, for the text served (metrics_server.h) or a test.
  std::vector<prometheus::MetricFamily> collect() const;
  MetricCounts counts() const;

 private:
  class Scraped;
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<Scraped> scraped_;
  prometheus::Family<prometheus::Histogram>& phase_seconds_;
  prometheus::Family<prometheus::Histogram>& setup_seconds_;
  prometheus::Family<prometheus::Counter>& setup_failures_;
  prometheus::Counter& created_;
  prometheus::Counter& released_;
  prometheus::Family<prometheus::Counter>& prefetches_;
  prometheus::Family<prometheus::Counter>& spares_;
  prometheus::Counter& setup_cancelled_;
  prometheus::Family<prometheus::Counter>& pull_failures_;
  prometheus::Family<prometheus::Histogram>& pull_seconds_;
  prometheus::Counter& pull_bytes_;
  prometheus::Family<prometheus::Counter>& refused_;
  prometheus::Family<prometheus::Counter>& swept_;
  prometheus::Family<prometheus::Gauge>& containers_;
  prometheus::Gauge& sandboxes_;
};

const char* kind_label(SetupKind kind);

}  // namespace crisp
