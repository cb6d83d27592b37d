#include "agent/node_metrics.h"

#include "agent/cri/cri_client.h"
#include "agent/images/image_store.h"
#include "agent/metrics/metrics_server.h"
#include "agent/steps/spare_containers.h"

namespace crisp {

namespace {

std::function<std::vector<ScrapedValue>()> one(std::function<double()> read) {
  return [read = std::move(read)] { return std::vector<ScrapedValue>{{{}, read()}}; };
}

template <class T>
std::function<double()> value_of(const std::atomic<T>& a) {
  return [&a] { return static_cast<double>(a.load()); };
}

}  // namespace

void add_node_metrics(Metrics& metrics, const CriClient& cri, const ImageStore& images, const SpareContainers& spares) {
  using enum ScrapedType;
  const PullCounters& pulls = images.counters();
  metrics.add_scraped("crisp_pulls_started_total", "Image pulls crispd started", kCounter, one(value_of(pulls.started)));
  metrics.add_scraped("crisp_pulls_merged_total", "Requests that waited on a pull another request had started", kCounter,
                      one(value_of(pulls.merged)));
  metrics.add_scraped("crisp_pulls_cached_total", "Requests whose image was on the node already", kCounter,
                      one(value_of(pulls.cached)));
  metrics.add_scraped("crisp_spares_ready", "Spare containers ready to be claimed", kGauge,
                      one([&spares] { return static_cast<double>(spares.ready()); }));
  metrics.add_scraped("crisp_spares_making", "Spare containers being made", kGauge,
                      one([&spares] { return static_cast<double>(spares.making()); }));
  metrics.add_scraped("process_resident_memory_bytes", "crispd's resident memory", kGauge, one(resident_bytes));
  metrics.add_scraped("process_open_fds", "crispd's open file descriptors", kGauge, one(open_descriptors));
  metrics.add_scraped("crisp_containerd_last_answer_age_seconds",
                      "Seconds since containerd last answered crispd (-1: never since crispd started)", kGauge,
                      one([&cri] { return cri.seconds_since_answer(); }));
}

}  // namespace crisp
