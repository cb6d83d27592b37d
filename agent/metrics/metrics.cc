#include "agent/metrics/metrics.h"

#include <mutex>

#include <prometheus/metric_family.h>

namespace crisp {

namespace {

using prometheus::Histogram;

// Seconds: a spare's claim takes milliseconds, a cold pull minutes.
const Histogram::BucketBoundaries kPhaseBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                   0.5,   1,      2.5,   5,    10,    30,   60,  120, 300};
const Histogram::BucketBoundaries kSetupBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5,
                                                   1,    2.5,   5,    10,    30,  60,   120, 300};
const Histogram::BucketBoundaries kPullBuckets = {0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800};

// Where a setup can fail (StepManager's phases), shown at 0 before any does.
constexpr const char* kFailurePhases[] = {"join",   "image",  "paths",  "devices",    "host",    "sandbox",
                                          "create", "start",  "holder", "rootfs", "entrypoint", "session"};
// What the sweep removes (reconcile.cc, step_spares.cc), shown at 0 before it removes any.
constexpr const char* kSweepCauses[] = {"exited",        "job_over",       "idle_sandbox",
                                        "spare_expired", "spare_orphaned", "spare_stray"};

const char* event_label(SpareEvent event) {
  switch (event) {
    case SpareEvent::kMade: return "made";
    case SpareEvent::kClaimed: return "claimed";
    case SpareEvent::kPassedOver: return "passed_over";
    case SpareEvent::kRemoved: return "removed";
  }
  return "made";
}

uint64_t value_of(prometheus::Family<prometheus::Counter>& family, const prometheus::Labels& labels) {
  return static_cast<uint64_t>(family.Add(labels).Value());
}

template <class Builder>
auto& family(Builder builder, const char* name, const char* help, prometheus::Registry& registry) {
  return builder.Name(name).Help(help).Register(registry);
}

}  // namespace

// The families add_scraped names, built anew at every scrape.
class Metrics::Scraped : public prometheus::Collectable {
 public:
  struct Source {
    std::string name, help;
    ScrapedType type;
    std::function<std::vector<ScrapedValue>()> read;
  };
  void add(Source s) {
    std::lock_guard l(mu_);
    sources_.push_back(std::move(s));
  }
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::lock_guard l(mu_);
    std::vector<prometheus::MetricFamily> out;
    for (const Source& s : sources_) {
      prometheus::MetricFamily f;
      f.name = s.name;
      f.help = s.help;
      f.type = s.type == ScrapedType::kCounter ? prometheus::MetricType::Counter : prometheus::MetricType::Gauge;
      for (const ScrapedValue& v : s.read()) {
        prometheus::ClientMetric m;
        for (const auto& [name, value] : v.labels) m.label.push_back({name, value});
        (s.type == ScrapedType::kCounter ? m.counter.value : m.gauge.value) = v.value;
        f.metric.push_back(std::move(m));
      }
      out.push_back(std::move(f));
    }
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Source> sources_;
};

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      scraped_(std::make_shared<Scraped>()),
      phase_seconds_(family(prometheus::BuildHistogram(), "crisp_setup_phase_seconds",
                            "Time of each phase of a step's container setup in crispd, by phase and kind", *registry_)),
      setup_seconds_(family(prometheus::BuildHistogram(), "crisp_setup_seconds",
                            "Time crispd took to give a step its container (setups that succeeded), by kind", *registry_)),
      setup_failures_(family(prometheus::BuildCounter(), "crisp_setup_failures_total",
                             "Step container setups that failed, by the phase they failed in", *registry_)),
      created_(family(prometheus::BuildCounter(), "crisp_steps_created_total",
                      "Step containers crispd answered (made, joined or claimed)", *registry_)
                   .Add({})),
      released_(family(prometheus::BuildCounter(), "crisp_steps_released_total", "Steps and jobs released", *registry_)
                    .Add({})),
      prefetches_(family(prometheus::BuildCounter(), "crisp_prefetches_total",
                         "Job prologs' prefetches, by whether the image was pulling or present", *registry_)),
      spares_(family(prometheus::BuildCounter(), "crisp_spares_total", "Spare containers, by what became of them",
                     *registry_)),
      setup_cancelled_(family(prometheus::BuildCounter(), "crisp_setup_cancelled_total",
                              "Step container setups left because the step or its client went first", *registry_)
                           .Add({})),
      pull_failures_(family(prometheus::BuildCounter(), "crisp_pull_failures_total",
                            "Image pulls crispd started that failed, by reason", *registry_)),
      pull_seconds_(family(prometheus::BuildHistogram(), "crisp_pull_duration_seconds",
                           "Time of the image pulls crispd started, by result", *registry_)),
      pull_bytes_(family(prometheus::BuildCounter(), "crisp_pull_bytes_total",
                         "Bytes of image content the node's pulls fetched", *registry_)
                      .Add({})),
      refused_(family(prometheus::BuildCounter(), "crisp_requests_refused_total",
                      "Requests crispd refused before acting, by reason", *registry_)),
      swept_(family(prometheus::BuildCounter(), "crisp_sweep_removals_total",
                    "Containers and sandboxes the sweep removed, by cause", *registry_)),
      containers_(family(prometheus::BuildGauge(), "crisp_containers",
                         "crispd's containers in containerd at the last sweep, by kind", *registry_)),
      sandboxes_(family(prometheus::BuildGauge(), "crisp_sandboxes",
                        "The users' sandboxes in containerd at the last sweep", *registry_)
                     .Add({})) {
  // Series present from the start at 0: a rate or increase sees a first failure.
  for (auto kind : {SetupKind::kNew, SetupKind::kNamedJoin, SetupKind::kSpareClaim})
    setup_seconds_.Add({{"kind", kind_label(kind)}}, kSetupBuckets);
  for (const char* phase : kFailurePhases) setup_failures_.Add({{"phase", phase}});
  for (const char* reason : {"not_root", "overloaded", "bad_input"}) refused_.Add({{"reason", reason}});
  for (const char* cause : kSweepCauses) swept_.Add({{"cause", cause}});
  for (const char* result : {"ok", "failed"}) pull_seconds_.Add({{"result", result}}, kPullBuckets);
  for (const char* image : {"pulling", "present"}) prefetches_.Add({{"image", image}});
  for (auto event : {SpareEvent::kMade, SpareEvent::kClaimed, SpareEvent::kPassedOver, SpareEvent::kRemoved})
    spares_.Add({{"event", event_label(event)}});
  present({}, 0);
}

const char* kind_label(SetupKind kind) {
  switch (kind) {
    case SetupKind::kNew: return "new";
    case SetupKind::kNamedJoin: return "named_join";
    case SetupKind::kSpareClaim: return "spare_claim";
  }
  return "new";
}

void Metrics::setup_phase(SetupKind kind, std::string_view phase, double seconds) {
  phase_seconds_.Add({{"kind", kind_label(kind)}, {"phase", std::string(phase)}}, kPhaseBuckets).Observe(seconds);
}

void Metrics::setup_done(SetupKind kind, double seconds) {
  setup_seconds_.Add({{"kind", kind_label(kind)}}, kSetupBuckets).Observe(seconds);
  created_.Increment();
}

void Metrics::released() { released_.Increment(); }

void Metrics::prefetched(bool pulling) { prefetches_.Add({{"image", pulling ? "pulling" : "present"}}).Increment(); }

void Metrics::spare(SpareEvent event) { spares_.Add({{"event", event_label(event)}}).Increment(); }

void Metrics::setup_failed(std::string_view phase) { setup_failures_.Add({{"phase", std::string(phase)}}).Increment(); }

void Metrics::setup_cancelled() { setup_cancelled_.Increment(); }

void Metrics::pull_ended(std::string_view reason, double seconds, double bytes) {
  if (!reason.empty()) pull_failures_.Add({{"reason", std::string(reason)}}).Increment();
  pull_seconds_.Add({{"result", reason.empty() ? "ok" : "failed"}}, kPullBuckets).Observe(seconds);
  if (bytes > 0) pull_bytes_.Increment(bytes);
}

void Metrics::refused(Refusal why) {
  const char* reason = why == Refusal::kNotRoot ? "not_root" : why == Refusal::kOverloaded ? "overloaded" : "bad_input";
  refused_.Add({{"reason", reason}}).Increment();
}

void Metrics::swept(std::string_view cause, uint64_t n) {
  if (n) swept_.Add({{"cause", std::string(cause)}}).Increment(static_cast<double>(n));
}

void Metrics::present(const std::map<std::string, double>& containers, double sandboxes) {
  for (const char* kind : {"step", "named", "spare"}) {
    auto it = containers.find(kind);
    containers_.Add({{"kind", kind}}).Set(it == containers.end() ? 0 : it->second);
  }
  sandboxes_.Set(sandboxes);
}

void Metrics::add_scraped(std::string name, std::string help, ScrapedType type,
                          std::function<std::vector<ScrapedValue>()> read) {
  scraped_->add({std::move(name), std::move(help), type, std::move(read)});
}

MetricCounts Metrics::counts() const {
  MetricCounts c;
  c.steps_created = static_cast<uint64_t>(created_.Value());
  c.steps_released = static_cast<uint64_t>(released_.Value());
  for (const char* cause : kSweepCauses) c.swept += value_of(swept_, {{"cause", cause}});
  c.prefetch_pulls = value_of(prefetches_, {{"image", "pulling"}});
  c.prefetches = c.prefetch_pulls + value_of(prefetches_, {{"image", "present"}});
  c.spares_made = value_of(spares_, {{"event", "made"}});
  c.spares_claimed = value_of(spares_, {{"event", "claimed"}});
  c.spares_passed_over = value_of(spares_, {{"event", "passed_over"}});
  c.spares_removed = value_of(spares_, {{"event", "removed"}});
  return c;
}

std::vector<prometheus::MetricFamily> Metrics::collect() const {
  auto out = registry_->Collect();
  for (auto& f : scraped_->Collect()) out.push_back(std::move(f));
  return out;
}

}  // namespace crisp
