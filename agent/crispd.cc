// crispd: the per-node agent between slurmstepd and containerd's CRI.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <climits>
#include <csignal>
#include <iostream>
#include <thread>

#include "agent/cri/cri_client.h"
#include "agent/cri/snapshot_client.h"
#include "agent/images/image_store.h"
#include "agent/metrics/metrics_server.h"
#include "agent/node_metrics.h"
#include "agent/node_units.h"
#include "agent/server.h"
#include "agent/slurm/slurm_jobs.h"
#include "agent/sweeper.h"
#include "common/client.h"
#include "common/log.h"
#include "common/strings.h"
#include "version.h"

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

std::string host_name() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  std::string s(buf);
  return s.substr(0, s.find('.'));
}

// Every flag, with its default; what main hands the managers.
struct Flags {
  std::string socket_path = crisp::kDefaultSocket;
  std::string endpoint = "unix:///run/crisp/containerd.sock";
  std::string holder = CRISP_LIBEXECDIR "/crisp-holder";
  std::string node = host_name();
  std::string handler;
  std::string level = "info";
  std::string registry_auth;
  std::string hca_policy = "all";
  std::string tmpfs_size = "25%";
  bool squashfs_any_owner = false;
  std::string snapshotter = "overlayfs";
  std::string sandbox_image;
  size_t max_imports = 2;
  crisp::WorkLimits squashfs_limits;
  std::string private_images = "private";
  std::string private_list = "/var/lib/crisp/private-images";
  std::string bundle_root = "/run/crisp/containerd/io.containerd.runtime.v2.task/k8s.io";
  crisp::DeviceRoots device_roots;
  int call_timeout = 30, pull_timeout = 1800, sweep_interval = 30, sandbox_grace = 120, entrypoint_timeout = 60,
      hook_timeout = 60;
  size_t spares = 16, spares_per_user = 8;
  int spare_grace = 600;
  std::string claims_dir = "/run/crisp/claims";
  std::string site_config = "/etc/crisp";
  std::string enroot_config;
  bool enroot_user_config = false;
  int pull_stall_timeout = 60;
  int parallel_tasks = 0;
  std::string metrics_address = "127.0.0.1:9474";
  std::string metrics_relay = CRISP_LIBEXECDIR "/crisp-metrics-relay";
  bool no_metrics = false;
  bool version = false;
};

void add_runtime_flags(CLI::App& app, Flags& f) {
  app.add_option("--socket", f.socket_path, "Unix socket to serve")->capture_default_str();
  app.add_option("--cri-endpoint", f.endpoint, "containerd CRI endpoint")->capture_default_str();
  app.add_option("--holder", f.holder, "crisp-holder binary on the host")->capture_default_str();
  app.add_option("--node-name", f.node, "node name written in labels")->capture_default_str();
  app.add_option("--runtime-handler", f.handler, "CRI runtime handler (empty: containerd's default)");
  app.add_option("--call-timeout", f.call_timeout, "seconds for each CRI call")->capture_default_str();
  app.add_option("--pull-timeout", f.pull_timeout, "seconds for one image pull")->capture_default_str();
  app.add_option("--pull-stall-timeout", f.pull_stall_timeout,
                 "seconds a pull may go without a byte arriving before it is abandoned (0: never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--parallel-tasks", f.parallel_tasks,
                 "containers created, started, ended or removed at once (0: one per CPU); more wait their turn")
      ->check(CLI::Range(0, crisp::CriClient::kMaxParallelTasks))
      ->capture_default_str();
  app.add_option("--sweep-interval", f.sweep_interval, "seconds between reconcile sweeps")->capture_default_str();
  app.add_option("--spares", f.spares,
                 "spare containers kept on the node, made ahead for the next steps of a user and image, as many as "
                 "of them were once made at the same time (0: none)")
      ->capture_default_str();
  app.add_option("--spares-per-user", f.spares_per_user, "of those, at most this many for one user")->capture_default_str();
  app.add_option("--spare-grace", f.spare_grace, "seconds a spare is kept after its user and image were last used")
      ->capture_default_str();
  app.add_option("--site-config", f.site_config,
                 "the site's mounts.d, environ.d, hooks.d, root-hooks.d and partitions/ for every container (empty: none)")
      ->capture_default_str();
  app.add_option("--enroot-config", f.enroot_config,
                 "an enroot configuration directory whose mounts.d, environ.d and hooks.d every container gets, as "
                 "enroot would give them (/etc/enroot; empty: none)");
  app.add_option("--hook-timeout", f.hook_timeout, "seconds a step's site hooks may take together")->capture_default_str();
  app.add_flag("--enroot-user-config", f.enroot_user_config,
               "with --enroot-config, each user's own enroot configuration too ($ENROOT_CONFIG_PATH: mounts.d, "
               "environ.d, hooks.d), read with their rights (a look of 10-40 ms at each step)");
  app.add_option("--claims-dir", f.claims_dir, "where crispd records which step claimed a spare")->capture_default_str();
  app.add_option("--sandbox-grace", f.sandbox_grace, "seconds a user's empty sandbox is kept for their next job")
      ->capture_default_str();
  app.add_option("--registry-auth", f.registry_auth,
                 "Docker config.json-format file of registry credentials for every user's pulls (root-only)");
  app.add_option("--entrypoint-timeout", f.entrypoint_timeout, "seconds an image's entrypoint may take")
      ->capture_default_str();
  app.add_option("--bundle-root", f.bundle_root, "containerd's task bundles (the OCI state of CDI hooks)")
      ->capture_default_str();
  app.add_option("--tmpfs-size", f.tmpfs_size,
                 "size limit of each tmpfs of --container-mounts, as tmpfs takes it (bytes, k, m, g, or % of RAM)")
      ->check([](const std::string& v) {
        bool ok = !v.empty() && v.find_first_not_of("0123456789kmgKMG%") == std::string::npos && std::isdigit(v[0]);
        return ok ? std::string() : std::string("not a tmpfs size");
      })
      ->capture_default_str();
  app.add_option("--private-images", f.private_images,
                 "who may use an image already on the node: never (anyone), private (an image pulled with "
                 "credentials: a user whose credentials its registry accepts), always (every image: likewise)")
      ->check(CLI::IsMember({"never", "private", "always"}))
      ->capture_default_str();
  app.add_option("--private-image-list", f.private_list, "where crispd remembers which images were pulled with credentials")
      ->capture_default_str();
  app.add_option("--metrics-address", f.metrics_address,
                 "host:port where Prometheus scrapes /metrics (any local user may read it: counts only)")
      ->capture_default_str();
  app.add_flag("--no-metrics", f.no_metrics, "serve no metrics");
  app.add_option("--metrics-relay", f.metrics_relay, "the HTTP server of the metrics, run as nobody")
      ->capture_default_str();
  app.add_option("--log-level", f.level, "debug, info, warn or error")->capture_default_str();
  app.add_flag("--version", f.version, "print the version and exit");
}

// Squashfs images, imports and saves, and the snapshots they read.
void add_squashfs_flags(CLI::App& app, Flags& f) {
  app.add_flag("--squashfs-any-owner", f.squashfs_any_owner,
               "let the kernel mount squashfs images of any owner (default: only those root owns and alone may "
               "write; others are extracted with the user's ids: the kernel's squashfs is not made for crafted images)");
  app.add_option("--snapshotter", f.snapshotter, "containerd's snapshotter for CRI's containers")->capture_default_str();
  app.add_option("--sandbox-image", f.sandbox_image,
                 "the runtime's sandbox image, which a squashfs image's container is made from, where the runtime does "
                 "not report it (containerd 2.x); empty: as the runtime reports it");
  app.add_option("--max-imports", f.max_imports, "crispctl imports the node runs at once (one per user)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  crisp::WorkLimits& w = f.squashfs_limits;
  app.add_option("--squashfs-cgroup", w.name,
                 "cgroup (under each hierarchy's root) where imports' and saves' mksquashfs run; empty: crispd's own")
      ->capture_default_str();
  app.add_option("--squashfs-cpus", w.cpus, "CPU time that cgroup may use, in cores")
      ->check(CLI::Range(0.1, 1024.0))
      ->capture_default_str();
  app.add_option("--squashfs-memory", w.memory_bytes, "memory that cgroup may use, in bytes")
      ->check(CLI::Range(uint64_t{128} << 20, uint64_t{1} << 50))
      ->capture_default_str();
}

void add_device_flags(CLI::App& app, Flags& f) {
  crisp::DeviceRoots& d = f.device_roots;
  app.add_option("--dev-root", d.dev, "where the node's device files are")->capture_default_str();
  app.add_option("--proc-root", d.proc, "procfs, for /proc/driver/nvidia")->capture_default_str();
  app.add_option("--gres-conf", d.gres_conf, "Slurm's gres.conf")->capture_default_str();
  app.add_option("--cdi-dir", d.cdi_dirs, "CDI spec directories, later ones win")->capture_default_str();
  app.add_option("--gpu-cdi-kind", d.gpu_cdi_kinds,
                 "CDI kinds that describe gres gpu (nvidia.com/gpu, amd.com/gpu, intel.com/gpu); default: any");
  app.add_option("--sys-root", d.sys, "sysfs, for HCAs and PCI topology")->capture_default_str();
  app.add_option("--hca-policy", f.hca_policy, "RDMA devices a step gets: all, or nearest (to its GPUs)")
      ->check(CLI::IsMember({"all", "nearest"}))
      ->capture_default_str();
}

// The log level, the holder and the signals: 0, or the exit status (reason logged).
int prepare(const Flags& f) {
  crisp::LogLevel lvl;
  if (!crisp::parse_log_level(f.level, lvl)) {
    std::cerr << "crispd: unknown --log-level " << f.level << "\n";
    return 2;
  }
  crisp::set_log_level(lvl);
  if (access(f.holder.c_str(), X_OK) != 0) {
    crisp::log_error("the holder " + f.holder + " is not executable: " + crisp::errno_text(errno));
    return 1;
  }
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGTERM, &sa, nullptr) != 0 || sigaction(SIGINT, &sa, nullptr) != 0 ||
      signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
    crisp::log_error("cannot install signal handlers: " + crisp::errno_text(errno));
    return 1;
  }
  return 0;
}

// squashfs: imports' and saves' bounds, their cgroup crispd's (made by serve()).
crisp::NodeConfig node_config(const Flags& f, crisp::SquashfsBounds squashfs) {
  crisp::NodeConfig c;
  c.node = {f.node, f.holder};
  c.runtime_handler = f.handler;
  c.start.entrypoint_timeout = std::chrono::seconds(f.entrypoint_timeout);
  c.start.bundle_root = f.bundle_root;
  c.registry_auth_file = f.registry_auth;
  c.devices = f.device_roots;
  c.host.tmpfs_size = f.tmpfs_size;
  c.squashfs_any_owner = f.squashfs_any_owner;
  c.sandbox_image = f.sandbox_image;
  c.hca_policy = f.hca_policy == "nearest" ? crisp::HcaPolicy::kNearestGpu : crisp::HcaPolicy::kAll;
  c.spares = {f.spares, f.spares_per_user, std::chrono::seconds(f.spare_grace)};
  c.claims_dir = f.claims_dir;
  // enroot's first: where both set a variable, crisp's own files win.
  c.hook_timeout = std::chrono::seconds(f.hook_timeout);
  if (!f.enroot_config.empty()) c.site_dirs.push_back({f.enroot_config, true, f.enroot_user_config});
  if (!f.site_config.empty()) c.site_dirs.push_back({f.site_config, false});
  c.imports_per_node = f.max_imports;
  c.squashfs = squashfs;
  return c;
}

// Imports and saves unbounded would be any user's way to load the node outside Slurm: said loudly.
crisp::WorkCgroup squashfs_cgroup(const Flags& f) {
  auto group = crisp::WorkCgroup::make(f.squashfs_limits);
  if (group) return std::move(*group);
  crisp::log_error("imports and saves run unbounded, in crispd's own cgroup: " + group.error());
  return {};
}

// Metrics on --metrics-address; one that cannot be served is logged, and crispd runs on
// (containers matter more than their counts).
std::unique_ptr<crisp::MetricsServer> serve_metrics(const Flags& f, crisp::Metrics& metrics, const crisp::CriClient& cri,
                                                    const crisp::ImageStore& images, const crisp::SpareContainers& spares) {
  if (f.no_metrics) return nullptr;
  crisp::add_node_metrics(metrics, cri, images, spares);
  auto server = crisp::MetricsServer::start({f.metrics_address, f.metrics_relay}, metrics);
  if (!server) {
    crisp::log_error("no metrics: " + server.error());
    return nullptr;
  }
  return std::move(*server);
}

int serve(const Flags& f) {
  int parallel = f.parallel_tasks ? f.parallel_tasks : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  crisp::CriClient cri(f.endpoint, std::chrono::seconds(f.call_timeout), std::chrono::seconds(f.pull_timeout), parallel);
  if (auto v = cri.version(); v)
    crisp::log_info("container runtime at " + f.endpoint + ": " + *v + "; " + std::to_string(parallel) +
                    " container task(s) at once");
  else
    crisp::log_warn(v.error() + "; requests will fail until it is up");
  auto policy = f.private_images == "never"    ? crisp::PrivateImagePolicy::kNever
                : f.private_images == "always" ? crisp::PrivateImagePolicy::kAlways
                                               : crisp::PrivateImagePolicy::kPrivate;
  std::string list_dir = f.private_list.substr(0, f.private_list.rfind('/'));
  if (!list_dir.empty() && mkdir(list_dir.c_str(), 0700) != 0 && errno != EEXIST)
    crisp::log_warn("cannot create " + list_dir + ": " + crisp::errno_text(errno));
  crisp::ContentClient content(cri.channel(), std::chrono::seconds(f.call_timeout));
  crisp::PullWatch watch;
  watch.content = &content;
  // 0: a stall limit longer than any pull may take.
  watch.stall_limit = std::chrono::seconds(f.pull_stall_timeout ? f.pull_stall_timeout : f.pull_timeout + 1);
  auto metrics = std::make_shared<crisp::Metrics>();
  watch.metrics = metrics;
  crisp::ImageStore images(cri, policy, f.private_list, watch);
  crisp::SnapshotClient snapshots(cri.channel(), f.snapshotter, std::chrono::seconds(f.call_timeout));
  crisp::WorkCgroup squashfs_group = squashfs_cgroup(f);
  crisp::SquashfsBounds squashfs;
  squashfs.cgroup = &squashfs_group;
  squashfs.limits = f.squashfs_limits;
  crisp::NodeConfig config = node_config(f, squashfs);
  config.start.snapshots = &snapshots;
  crisp::NodeSeams seams;
  seams.step_gpus = crisp::slurm_step_gpus;
  seams.step_liveness = crisp::slurm_step_liveness;
  seams.job_partition = crisp::slurm_job_partition;
  crisp::NodeUnits units(cri, images, *metrics, std::move(config), std::move(seams));
  crisp::Sweeper sweeper(units.sweep_parts(), std::chrono::seconds(f.sweep_interval),
                         std::chrono::seconds(f.sandbox_grace), crisp::slurm_job_liveness);
  crisp::Server server(units.served());
  if (auto s = server.listen_on(f.socket_path); !s) {
    crisp::log_error(s.error());
    return 1;
  }
  crisp::log_info("crispd " CRISP_VERSION " serving " + f.socket_path + " on node " + f.node);
  // Last made, first gone: its threads read everything above.
  auto served = serve_metrics(f, *metrics, cri, images, units.spares);
  server.serve(g_stop);
  crisp::log_info("crispd stopping");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"crispd: runs Slurm job steps in containers through containerd's CRI"};
  Flags flags;
  add_runtime_flags(app, flags);
  add_squashfs_flags(app, flags);
  add_device_flags(app, flags);
  CLI11_PARSE(app, argc, argv);
  if (flags.version) {
    std::cout << "crispd " << CRISP_VERSION << "\n";
    return 0;
  }
  if (int rc = prepare(flags)) return rc;
  return serve(flags);
}
