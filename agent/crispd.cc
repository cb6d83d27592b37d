// crispd: the per-node agent between slurmstepd and containerd's CRI.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <climits>
#include <csignal>
#include <iostream>
#include <thread>

#include "agent/cri/cri_client.h"
#include "agent/images/image_store.h"
#include "common/log.h"
#include "agent/reconcile.h"
#include "agent/server.h"
#include "agent/step_manager.h"
#include "common/client.h"
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"crispd: runs Slurm job steps in containers through containerd's CRI"};
  std::string socket_path = crisp::kDefaultSocket;
  std::string endpoint = "unix:///run/crisp/containerd.sock";
  std::string holder = CRISP_LIBEXECDIR "/crisp-holder";
  std::string node = host_name();
  std::string handler;
  std::string level = "info";
  std::string registry_auth;
  crisp::DeviceRoots device_roots;
  int call_timeout = 30, pull_timeout = 1800, sweep_interval = 30, sandbox_grace = 120, entrypoint_timeout = 60;
  int parallel_tasks = 0;
  bool version = false;
  app.add_option("--socket", socket_path, "Unix socket to serve")->capture_default_str();
  app.add_option("--cri-endpoint", endpoint, "containerd CRI endpoint")->capture_default_str();
  app.add_option("--holder", holder, "crisp-holder binary on the host")->capture_default_str();
  app.add_option("--node-name", node, "node name written in labels")->capture_default_str();
  app.add_option("--runtime-handler", handler, "CRI runtime handler (empty: containerd's default)");
  app.add_option("--call-timeout", call_timeout, "seconds for each CRI call")->capture_default_str();
  app.add_option("--pull-timeout", pull_timeout, "seconds for one image pull")->capture_default_str();
  app.add_option("--parallel-tasks", parallel_tasks,
                 "containers created, started or removed at once (0: one per CPU); more wait their turn")
      ->check(CLI::Range(0, crisp::CriClient::kMaxParallelTasks))
      ->capture_default_str();
  app.add_option("--sweep-interval", sweep_interval, "seconds between reconcile sweeps")->capture_default_str();
  app.add_option("--sandbox-grace", sandbox_grace, "seconds a user's empty sandbox is kept for their next job")->capture_default_str();
  app.add_option("--registry-auth", registry_auth,
                 "Docker config.json-format file of registry credentials for every user's pulls (root-only)");
  app.add_option("--entrypoint-timeout", entrypoint_timeout, "seconds an image's entrypoint may take")
      ->capture_default_str();
  app.add_option("--dev-root", device_roots.dev, "where the node's device files are")->capture_default_str();
  app.add_option("--proc-root", device_roots.proc, "procfs, for /proc/driver/nvidia")->capture_default_str();
  app.add_option("--gres-conf", device_roots.gres_conf, "Slurm's gres.conf")->capture_default_str();
  app.add_option("--cdi-dir", device_roots.cdi_dirs, "CDI spec directories, later ones win")->capture_default_str();
  app.add_option("--gpu-cdi-kind", device_roots.gpu_cdi_kinds,
                 "CDI kinds that describe gres gpu (nvidia.com/gpu, amd.com/gpu, intel.com/gpu); default: any");
  app.add_option("--sys-root", device_roots.sys, "sysfs, for HCAs and PCI topology")->capture_default_str();
  std::string hca_policy = "all";
  std::string bundle_root = "/run/crisp/containerd/io.containerd.runtime.v2.task/k8s.io";
  app.add_option("--bundle-root", bundle_root, "containerd's task bundles (the OCI state of CDI hooks)")
      ->capture_default_str();
  app.add_option("--hca-policy", hca_policy, "RDMA devices a step gets: all, or nearest (to its GPUs)")
      ->check(CLI::IsMember({"all", "nearest"}))
      ->capture_default_str();
  app.add_option("--log-level", level, "debug, info, warn or error")->capture_default_str();
  app.add_flag("--version", version, "print the version and exit");
  CLI11_PARSE(app, argc, argv);
  if (version) {
    std::cout << "crispd " << CRISP_VERSION << "\n";
    return 0;
  }
  crisp::LogLevel lvl;
  if (!crisp::parse_log_level(level, lvl)) {
    std::cerr << "crispd: unknown --log-level " << level << "\n";
    return 2;
  }
  crisp::set_log_level(lvl);
  if (access(holder.c_str(), X_OK) != 0) {
    crisp::log_error("the holder " + holder + " is not executable: " + crisp::errno_text(errno));
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

  if (parallel_tasks == 0) parallel_tasks = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  crisp::CriClient cri(endpoint, std::chrono::seconds(call_timeout), std::chrono::seconds(pull_timeout),
                       parallel_tasks);
  if (auto v = cri.version(); v)
    crisp::log_info("container runtime at " + endpoint + ": " + *v + "; " + std::to_string(parallel_tasks) +
                    " container task(s) at once");
  else
    crisp::log_warn(v.error() + "; requests will fail until it is up");

  crisp::ImageStore images(cri);
  crisp::StepSettings settings;
  settings.node = {node, holder};
  settings.runtime_handler = handler;
  settings.entrypoint_timeout = std::chrono::seconds(entrypoint_timeout);
  settings.registry_auth_file = registry_auth;
  settings.devices = device_roots;
  settings.bundle_root = bundle_root;
  settings.hca_policy = hca_policy == "nearest" ? crisp::HcaPolicy::kNearestGpu : crisp::HcaPolicy::kAll;
  crisp::StepManager steps(cri, images, settings);
  crisp::Sweeper sweeper(steps, std::chrono::seconds(sweep_interval), std::chrono::seconds(sandbox_grace));
  crisp::Server server(steps, images, &sweeper);
  if (auto s = server.listen_on(socket_path); !s) {
    crisp::log_error(s.error());
    return 1;
  }
  crisp::log_info("crispd " CRISP_VERSION " serving " + socket_path + " on node " + node);
  server.serve(g_stop);
  crisp::log_info("crispd stopping");
  return 0;
}
