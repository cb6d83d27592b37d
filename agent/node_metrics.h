// The metrics read when Prometheus scrapes crispd: the counters crispd keeps for
// `crispctl stats`, its memory and descriptors, and containerd's health.
#pragma once

#include "agent/cri/cri_client.h"
#include "agent/images/image_store.h"
#include "agent/metrics/metrics.h"
#include "agent/step_manager.h"

namespace crisp {

// The sources live as long as metrics is served (crispd's serve()).
void add_node_metrics(Metrics& metrics, const CriClient& cri, const ImageStore& images, const StepManager& steps);

}  // namespace crisp
