#include "agent/node_units.h"

#include "agent/images/image_store.h"

namespace crisp {
namespace {

// How long after a step's container is answered (or removed) work no step waits for still
// waits: the step's own tasks start then (Slurm's launch, the tasks joining), a burst's later
// steps are still being launched, and runc's work for a container, 100 ms of CPU and more,
// would slow them on a small node (32 steps at once, by hand: the last few took 6.5 s with
// spares made beside them, bare ones 4).
constexpr std::chrono::milliseconds kQuiet{200};
// A step's container being made this long (queued behind a burst's, or its entrypoint or a
// site hook running) no longer holds up spares and removals; the next step's does.
constexpr std::chrono::milliseconds kLongest{5000};

StartSettings start_settings(const NodeConfig& c) {
  StartSettings s = c.start;
  s.rootfs_stage = c.host.dirs.rootfs_stage;
  return s;
}

}  // namespace

NodeUnits::NodeUnits(CriClient& cri_client, ImageStore& image_store, Metrics& node_metrics, NodeConfig node_config,
                     NodeSeams seams)
    : cri(cri_client),
      store(image_store),
      metrics(node_metrics),
      config(std::move(node_config)),
      work(kQuiet, kLongest),
      sandboxes(cri, locks, config.node, config.runtime_handler),
      holders(seams.end_process),
      sessions(std::move(seams.start_session), seams.end_process, config.host.tmpfs_size),
      pool(config.spares),
      claims(config.claims_dir),
      containers(cri, holders, sessions, sandboxes, claims, pool, config.stop_timeout_s),
      starter(cri, start_settings(config), std::move(seams.give_rootfs)),
      requests(store, config.registry_auth_file, std::move(seams.step_liveness), metrics),
      image(requests, store, cri, config.squashfs_any_owner, config.sandbox_image),
      devices(config.devices, config.hca_policy, config.node.node_name, std::move(seams.step_gpus)),
      host(config.host, config.devices),
      site(config.site_dirs, std::move(seams.job_partition), config.hook_timeout, std::move(seams.run_hook)),
      named(cri, containers, sessions, starter, store),
      spares({cri, pool, claims, containers, sandboxes, starter, holders, work}, config.node, std::move(seams.attach), metrics),
      creator({locks, sandboxes, containers, sessions, holders, starter, named, spares, work, devices, image, host, site},
              config.node,
              metrics),
      ends(locks, containers, sessions, work, metrics),
      saver(cri, config.squashfs),
      importer(requests, config.start.snapshots, config.squashfs, config.host.dirs.imports, config.imports_per_user,
               config.imports_per_node) {}

ServedUnits NodeUnits::served() {
  return {creator, ends, containers, saver, importer, requests, spares, store.counters(), metrics};
}

SweepParts NodeUnits::sweep_parts() { return {cri, locks, containers, spares, sandboxes, claims, metrics}; }

}  // namespace crisp
