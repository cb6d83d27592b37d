// The metrics read when Prometheus scrapes crispd: the image store's pull counters, the
// spares ready, crispd's memory and descriptors, and containerd's health.
#pragma once

namespace crisp {

class CriClient;
class ImageStore;
class Metrics;
class SpareContainers;

// The sources live as long as metrics is served (crispd's serve()).
void add_node_metrics(Metrics& metrics, const CriClient& cri, const ImageStore& images, const SpareContainers& spares);

}  // namespace crisp
