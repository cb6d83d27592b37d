#include "agent/steps.h"

#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>

#include "agent/cdi_hooks.h"
#include "agent/credentials.h"
#include "agent/driver_discovery.h"
#include "agent/entrypoint.h"
#include "agent/gres.h"
#include "agent/labels.h"
#include "agent/log.h"
#include "agent/tmpfs.h"
#include "agent/user_access.h"
#include "common/image_ref.h"
#include "common/mount_spec.h"
#include "common/strings.h"

namespace crisp {
namespace {

v1::BindMount bind_mount(const std::string& source, const std::string& target, bool readonly) {
  v1::BindMount m;
  m.set_source(source);
  m.set_target(target);
  m.set_readonly(readonly);
  return m;
}

std::string job_text(uint32_t job, uint32_t step) { return "job " + std::to_string(job) + " step " + labels::step_name(step); }

// Milliseconds each phase of a step's setup took, for the log: where launch time goes.
class PhaseClock {
 public:
  void lap(const char* phase) {
    auto now = std::chrono::steady_clock::now();
    text_ += (text_.empty() ? "" : ", ") + std::string(phase) + " " +
             std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now - last_).count());
    last_ = now;
  }
  const std::string& text() const { return text_; }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  std::string text_;
};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::shared_ptr<std::shared_mutex> StepManager::slot(uint64_t key) {
  std::lock_guard lock(locks_mu_);
  auto& m = locks_[key];
  if (!m) m = std::make_shared<std::shared_mutex>();
  return m;
}

void StepManager::forget_job_lock(uint32_t job_id) {
  std::lock_guard lock(locks_mu_);
  locks_.erase(job_id);
}

SlotLock<std::unique_lock<std::shared_mutex>> StepManager::lock_job(uint32_t job_id) { return SlotLock<std::unique_lock<std::shared_mutex>>(slot(job_id)); }
SlotLock<std::shared_lock<std::shared_mutex>> StepManager::share_job(uint32_t job_id) { return SlotLock<std::shared_lock<std::shared_mutex>>(slot(job_id)); }
SlotLock<std::unique_lock<std::shared_mutex>> StepManager::lock_user(uint32_t uid) { return SlotLock<std::unique_lock<std::shared_mutex>>(slot(uint64_t{1} << 32 | uid)); }

void StepManager::touch_sandbox(const std::string& sandbox_id) {
  if (sandbox_id.empty()) return;
  std::lock_guard lock(used_mu_);
  sandbox_used_ns_[sandbox_id] = now_ns();
}

int64_t StepManager::last_used_ns(const cri::PodSandbox& sandbox) {
  std::lock_guard lock(used_mu_);
  auto it = sandbox_used_ns_.find(sandbox.id());
  return it == sandbox_used_ns_.end() ? sandbox.created_at() : std::max(it->second, sandbox.created_at());
}

Labels StepManager::job_selector(uint32_t job_id) const {
  return {{labels::kManaged, "true"}, {labels::kJob, std::to_string(job_id)}};
}

Result<cri::PodSandbox> StepManager::find_or_run_user_sandbox(uint32_t uid, const std::string& user) {
  Labels sel = job_selector(0);
  sel[labels::kUid] = std::to_string(uid);
  auto found = cri_.list_pod_sandboxes(sel);
  if (!found) return Error{found.error()};
  for (const cri::PodSandbox& sb : *found) {
    if (sb.state() == cri::SANDBOX_READY) return sb;
    // A sandbox that is not ready is a leftover: it must go before its name can be reused.
    log_warn("removing sandbox " + sb.id() + " of uid " + std::to_string(uid) + ", which is not ready");
    if (auto s = cri_.remove_pod_sandbox(sb.id()); !s) return Error{s.error()};
  }
  auto id = cri_.run_pod_sandbox(build_user_sandbox_config(uid, user, settings_.node), settings_.runtime_handler);
  if (!id) return fail("cannot create the sandbox of uid " + std::to_string(uid) + ": " + id.error());
  cri::PodSandbox sb;
  sb.set_id(*id);
  sb.set_state(cri::SANDBOX_READY);
  return sb;
}

Result<std::optional<cri::Container>> StepManager::find_named(const JobIdentity& scope, const std::string& name) {
  Labels sel = job_selector(scope.job_id);
  sel[labels::kUid] = std::to_string(scope.uid);
  sel[labels::kName] = name;
  auto found = cri_.list_containers(sel);
  if (!found) return Error{found.error()};
  std::optional<cri::Container> running;
  for (const cri::Container& c : *found) {
    if (c.state() == cri::CONTAINER_RUNNING && !running) {
      running = c;
      continue;
    }
    // Its holder died (containerd restarted, the node rebooted): only its name is left.
    log_warn("removing named container " + c.id().substr(0, 12) + " (" + name + "), which is not running");
    v1::ReleaseResponse undo;
    (void)remove_containers({c}, undo);
  }
  return running;
}

Result<v1::CreateStepResponse> StepManager::attach(const cri::Container& c, const v1::CreateStepRequest& req) {
  auto status = cri_.container_status(c.id(), true);
  Result<int> pid = status ? parse_container_pid({status->info().begin(), status->info().end()})
                           : Result<int>(Error{status.error()});
  if (!pid) return fail("the container named " + req.name() + " cannot be joined: " + pid.error());
  v1::CreateStepResponse out;
  out.set_attached(true);
  out.set_holder_pid(*pid);
  out.set_container_id(c.id());
  out.set_sandbox_id(c.pod_sandbox_id());
  std::string image = c.labels().count(labels::kImage) ? c.labels().at(labels::kImage) : "";
  out.set_image(image);
  auto env = c.labels().count(labels::kEntrypoint) ? holder_environment(*pid) : Result<std::vector<std::string>>(Error{""});
  auto config = images_.ensure(image);
  if (!config) return Error{config.error()};
  for (const std::string& e : env ? *env : config->env) out.add_image_env(e);
  out.set_image_workdir(config->working_dir);
  // The job's directory is mounted when the container was made, if it was then.
  out.set_job_workdir_mounted(!req.job_workdir().empty());
  return out;
}

Result<v1::CreateStepResponse> StepManager::create(const v1::CreateStepRequest& req) {
  auto t0 = std::chrono::steady_clock::now();
  PhaseClock phases;
  const bool named = !req.name().empty();
  // A named container of global scope belongs to no job (job 0).
  JobIdentity scope{named && req.global_scope() ? 0 : req.job_id(), req.uid(), req.user()};
  auto finish = [&](v1::CreateStepResponse out, const std::string& what) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    out.set_setup_ms(static_cast<uint32_t>(ms));
    created++;
    log_info(what + " container " + out.container_id().substr(0, 12) + " for " + job_text(req.job_id(), req.step_id()) +
             " (uid " + std::to_string(req.uid()) + ", " + out.image() + ") in " + std::to_string(ms) + " ms" +
             (phases.text().empty() ? "" : " (" + phases.text() + ")"));
    return out;
  };
  // Answers from an existing named container, or nullopt when one must be made.
  auto use_named = [&]() -> Result<std::optional<v1::CreateStepResponse>> {
    auto found = find_named(scope, req.name());
    if (!found) return Error{found.error()};
    if (!*found) {
      if (req.name_mode() == v1::NAME_EXEC)
        return fail("there is no container named " + req.name() + " on this node: --container-name=" + req.name() +
                    ":exec only joins one made by an earlier step");
      if (req.image().empty())
        return fail("there is no container named " + req.name() + " on this node: add --container-image to create it");
      return std::optional<v1::CreateStepResponse>();
    }
    if (req.name_mode() == v1::NAME_CREATE)
      return fail("a container named " + req.name() + " already exists on this node (--container-name=" + req.name() +
                  ":create makes a new one only)");
    auto out = attach(**found, req);
    if (!out) return Error{out.error()};
    return std::optional<v1::CreateStepResponse>(*out);
  };
  if (named) {
    auto lock = lock_job(scope.job_id);
    auto r = use_named();
    if (!r) return Error{r.error()};
    if (*r) return finish(**r, "joined named");
  }

  auto ref = parse_image_ref(req.image());
  if (!ref) return Error{ref.error()};
  std::string image = ref->canonical();

  UserCreds creds{req.uid(), req.gid(), {req.supplementary_gids().begin(), req.supplementary_gids().end()}};
  StepContainerInput in;
  in.job = scope;
  in.step_id = req.step_id();
  in.gid = req.gid();
  in.groups = creds.groups;
  in.image = image;
  in.stepd_pid = req.stepd_pid();
  in.name = req.name();
  in.readonly_rootfs = req.readonly_rootfs();
  size_t tmpfs_count = 0;
  for (const v1::BindMount& m : req.mounts()) {
    if (m.tmpfs()) {
      tmpfs_count++;
      continue;
    }
    auto src = resolve_as_user(creds, m.source());
    if (!src) return fail("mount source " + src.error() + ": it must exist and be readable by you");
    v1::BindMount resolved = m;
    resolved.set_source(*src);
    in.mounts.push_back(resolved);
  }
  if (req.mount_home()) {
    auto home = home_of(req.uid());
    if (!home) return Error{home.error()};
    auto dir = resolve_as_user(creds, *home);
    if (!dir) return fail("--container-mount-home: your home directory " + dir.error());
    in.mounts.push_back(bind_mount(*dir, *home, false));
  }
  if (!req.batch_script().empty()) {
    // slurmd spooled it; slurmstepd (root) vouches for the path.
    in.mounts.push_back(bind_mount(req.batch_script(), req.batch_script(), true));
  }
  v1::CreateStepResponse out;
  auto add_devices = [&](const std::vector<PlannedDevice>& devices, const std::vector<std::string>& env) {
    for (const PlannedDevice& d : devices) {
      cri::Device dev;
      dev.set_host_path(d.host_path);
      dev.set_container_path(d.container_path);
      dev.set_permissions(d.permissions);
      in.devices.push_back(dev);
    }
    for (const std::string& e : env) out.add_device_env(e);
  };
  std::vector<std::string> gpu_bdfs;
  bool driver_mounted = false;
  std::vector<CdiHook> hooks;
  if (!req.gpus().empty()) {
    auto indices = parse_index_list(req.gpus());
    if (!indices) return Error{indices.error()};
    auto plan = plan_gpus(settings_.devices, settings_.node.node_name, *indices);
    if (!plan) return Error{plan.error()};
    add_devices(plan->devices, plan->env);
    // The admin's CDI spec names these host paths: no user check applies.
    for (const PlannedMount& m : plan->mounts) in.mounts.push_back(bind_mount(m.host_path, m.container_path, m.readonly));
    for (uint32_t g : plan->gids) in.groups.push_back(g);
    gpu_bdfs = plan->gpu_bdfs;
    driver_mounted = plan->driver_mounted;
    hooks = plan->hooks;
  }
  RdmaPlan rdma = plan_rdma(settings_.devices, settings_.hca_policy, gpu_bdfs);
  add_devices(rdma.devices, rdma.env);
  if (!req.job_workdir().empty()) {
    // A working directory the user cannot reach stays unmounted; slurmstepd then reports it.
    if (auto wd = resolve_as_user(creds, req.job_workdir()); wd) {
      in.workdir = *wd;
      in.workdir_alias = normalize_path(req.job_workdir());
      out.set_job_workdir_mounted(true);
    }
  }

  auto config = images_.ensure(
      image, credentials_for(&creds, settings_.registry_auth_file, ref->registry, req.registry_user()));
  if (!config) return Error{config.error()};
  phases.lap("image");
  out.set_image(image);
  for (const std::string& e : config->env) out.add_image_env(e);
  out.set_image_workdir(config->working_dir);
  for (const std::string& e : config->entrypoint) out.add_entrypoint(e);
  for (const std::string& c : config->cmd) out.add_cmd(c);
  if (req.entrypoint()) in.entrypoint = config->entrypoint;
  if (driver_mounted)
    for (const std::string& e : driver_path_env(config->env)) out.add_device_env(e);

  // Unnamed steps touch only their own container: they are made side by side.
  std::optional<SlotLock<std::unique_lock<std::shared_mutex>>> whole_job;
  std::optional<SlotLock<std::shared_lock<std::shared_mutex>>> shared_job;
  if (named) whole_job.emplace(lock_job(scope.job_id));
  else shared_job.emplace(share_job(scope.job_id));
  if (named) {
    // Another step of the job may have made it while the image was pulled.
    auto r = use_named();
    if (!r) return Error{r.error()};
    if (*r) return finish(**r, "joined named");
  }
  std::string key = std::to_string(scope.job_id) + "." + (named ? std::to_string(req.uid()) + "." + req.name()
                                                                : labels::step_name(req.step_id()));
  if (tmpfs_count) {
    auto dirs = make_tmpfs(kTmpfsBase, key, tmpfs_count, req.uid(), req.gid());
    if (!dirs) return Error{dirs.error()};
    in.tmpfs_root = std::string(kTmpfsBase) + "/" + key;
    size_t i = 0;
    for (const v1::BindMount& m : req.mounts())
      if (m.tmpfs()) in.tmpfs.emplace_back((*dirs)[i++], m.target());
  }
  // Only the chosen HCAs show in /sys/class/infiniband, where the node has that class.
  struct stat ib {};
  if (!rdma.hcas.empty() && rdma.hcas.size() < list_hcas(settings_.devices).size() &&
      stat(settings_.container_sysfs_class.c_str(), &ib) == 0) {
    std::string view = std::string(kTmpfsBase) + "-hca/" + key;
    if (auto s = make_hca_view(settings_.container_sysfs_class, rdma.hcas, view); !s) return Error{s.error()};
    in.hca_view = view;
  }
  if (!in.entrypoint.empty()) {
    // Its output explains a failing entrypoint, and is shown on request.
    if (auto s = prepare_log_directory(); !s) return Error{s.error()};
    in.log_path = key + ".log";
  }

  // Undo what this call made. An empty sandbox is left to the sweep, as at a job's end.
  v1::ReleaseResponse undo;
  auto cleanup = [&](const std::string& container_id) {
    cri::Container c;
    c.set_id(container_id);
    if (!in.tmpfs_root.empty()) (*c.mutable_labels())[labels::kTmpfs] = in.tmpfs_root;
    if (!in.hca_view.empty()) (*c.mutable_labels())[labels::kHcaView] = in.hca_view;
    if (container_id.empty()) {
      if (!in.tmpfs_root.empty()) remove_tmpfs(in.tmpfs_root);
      if (!in.hca_view.empty()) remove_hca_view(in.hca_view);
    } else {
      (void)remove_containers({c}, undo);
    }
  };

  if (!named) {
    Labels step_sel = job_selector(req.job_id());
    step_sel[labels::kStep] = std::to_string(req.step_id());
    if (auto stale = cri_.list_containers(step_sel); stale && !stale->empty()) {
      log_warn("removing " + std::to_string(stale->size()) + " stale container(s) of " +
               job_text(req.job_id(), req.step_id()));
      (void)remove_containers(*stale, undo);
    }
  }

  // Under the user's lock until the container is in the sandbox: an empty one may be the sweep's.
  auto user_lock = lock_user(req.uid());
  auto sandbox = find_or_run_user_sandbox(req.uid(), req.user());
  if (!sandbox) {
    cleanup("");
    return Error{sandbox.error()};
  }
  phases.lap("sandbox");
  auto id = cri_.create_container(sandbox->id(), build_step_container(in, settings_.node),
                                  build_user_sandbox_config(req.uid(), req.user(), settings_.node));
  touch_sandbox(sandbox->id());
  user_lock.unlock();
  if (!id) {
    cleanup("");
    return fail("cannot create the step's container from " + image + ": " + id.error());
  }
  phases.lap("create");
  if (auto s = cri_.start_container(*id); !s) {
    cleanup(*id);
    return fail("cannot start the step's container from " + image + ": " + s.error());
  }
  phases.lap("start");
  auto status = cri_.container_status(*id, true);
  Result<int> pid = status ? parse_container_pid({status->info().begin(), status->info().end()})
                           : Result<int>(Error{status.error()});
  if (!pid) {
    cleanup(*id);
    return fail("the step's container did not start: " + pid.error());
  }
  // runc's init execs the container's process only after StartContainer has
  // returned, and an entrypoint runs before it execs the holder: wait for it.
  auto ran = await_holder(*pid, settings_.holder_exe, in.entrypoint.empty() ? std::chrono::seconds(10) : settings_.entrypoint_timeout);
  if (!in.entrypoint.empty()) {
    std::string log = read_cri_log(std::string(kLogDirectory) + "/" + in.log_path);
    if (!ran) {
      cleanup(*id);
      while (!log.empty() && log.back() == '\n') log.pop_back();
      for (char& ch : log)
        if (ch == '\n') ch = ' ';
      return fail("the image's entrypoint " + join(in.entrypoint, " ") + " " + ran.error() +
                  " (it must end with exec \"$@\")" + (log.empty() ? "" : "; its output: " + log));
    }
    if (req.entrypoint_log()) out.set_entrypoint_log(log);
    auto env = holder_environment(*pid);
    if (!env) {
      cleanup(*id);
      return fail("cannot read the environment the entrypoint left: " + env.error());
    }
    out.clear_image_env();
    for (const std::string& e : *env) out.add_image_env(e);
  } else if (!ran) {
    cleanup(*id);
    return fail("the step's container " + ran.error());
  }
  phases.lap("holder");
  for (const CdiHook& hook : hooks)
    if (auto s = run_cdi_hook(hook, oci_state_json(*id, *pid, settings_.bundle_root + "/" + *id)); !s) {
      cleanup(*id);
      return Error{s.error()};
    }
  // A slurmstepd that gave up waiting (or died) will never use nor release this.
  if (!named && req.stepd_pid() > 0 && kill(req.stepd_pid(), 0) != 0 && errno == ESRCH) {
    cleanup(*id);
    return fail("slurmstepd " + std::to_string(req.stepd_pid()) + " exited while its container was made");
  }
  out.set_holder_pid(*pid);
  out.set_container_id(*id);
  out.set_sandbox_id(sandbox->id());
  return finish(out, named ? "created named" : "created");
}

Status StepManager::remove_containers(const std::vector<cri::Container>& containers, v1::ReleaseResponse& out) {
  Status result = Ok{};
  for (const cri::Container& c : containers) {
    // The holder exits on SIGTERM, so the stop is quick; remove alone would SIGKILL it.
    if (auto s = cri_.stop_container(c.id(), settings_.stop_timeout_s); !s)
      log_warn("stopping container " + c.id() + ": " + s.error());
    if (auto s = cri_.remove_container(c.id()); !s) {
      log_error("removing container " + c.id() + ": " + s.error());
      result = s;
      continue;
    }
    out.set_removed_containers(out.removed_containers() + 1);
    touch_sandbox(c.pod_sandbox_id());
    if (auto it = c.labels().find(labels::kTmpfs); it != c.labels().end()) remove_tmpfs(it->second);
    if (auto it = c.labels().find(labels::kHcaView); it != c.labels().end()) remove_hca_view(it->second);
  }
  return result;
}

Status StepManager::remove_sandbox_if_empty(const cri::PodSandbox& sandbox, bool& removed) {
  removed = false;
  auto rest = cri_.list_containers({}, sandbox.id());
  if (!rest) return Error{rest.error()};
  if (!rest->empty()) return Ok{};
  if (auto s = cri_.stop_pod_sandbox(sandbox.id()); !s) return s;
  if (auto s = cri_.remove_pod_sandbox(sandbox.id()); !s) return s;
  removed = true;
  return Ok{};
}

Result<v1::ReleaseResponse> StepManager::release_step(uint32_t job_id, uint32_t step_id) {
  auto t0 = std::chrono::steady_clock::now();
  auto lock = share_job(job_id);
  Labels sel = job_selector(job_id);
  sel[labels::kStep] = std::to_string(step_id);
  v1::ReleaseResponse out;
  auto containers = cri_.list_containers(sel);
  if (!containers) return Error{containers.error()};
  if (auto s = remove_containers(*containers, out); !s) return Error{s.error()};
  released++;
  log_info("released " + job_text(job_id, step_id) + ": " + std::to_string(out.removed_containers()) +
           " container(s) in " +
           std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count()) +
           " ms");
  return out;
}

Result<v1::ReleaseResponse> StepManager::release_job(uint32_t job_id) {
  auto lock = lock_job(job_id);
  v1::ReleaseResponse out;
  auto containers = cri_.list_containers(job_selector(job_id));
  if (!containers) return Error{containers.error()};
  if (auto s = remove_containers(*containers, out); !s) return Error{s.error()};
  // Sandboxes of a job, made by crispd 0.1.0; since then they are the users'.
  auto sandboxes = cri_.list_pod_sandboxes(job_selector(job_id));
  if (!sandboxes) return Error{sandboxes.error()};
  for (const cri::PodSandbox& sb : *sandboxes) {
    if (auto s = cri_.stop_pod_sandbox(sb.id()); !s) return Error{s.error()};
    if (auto s = cri_.remove_pod_sandbox(sb.id()); !s) return Error{s.error()};
    out.set_removed_sandbox(true);
  }
  if (out.removed_containers() || out.removed_sandbox())
    log_info("released job " + std::to_string(job_id) + ": " + std::to_string(out.removed_containers()) +
             " container(s)" + (out.removed_sandbox() ? ", sandbox removed" : ""));
  // A node runs many jobs: their mutexes must not pile up.
  if (job_id != 0) forget_job_lock(job_id);
  return out;
}

Result<v1::ReleaseResponse> StepManager::remove_named(uint32_t uid, const std::string& name) {
  Labels sel = {{labels::kManaged, "true"}, {labels::kUid, std::to_string(uid)}, {labels::kName, name}};
  auto found = cri_.list_containers(sel);
  if (!found) return Error{found.error()};
  if (found->empty()) return fail("there is no container named " + name + " of uid " + std::to_string(uid) + " on this node");
  v1::ReleaseResponse out;
  for (const cri::Container& c : *found) {
    uint32_t job = static_cast<uint32_t>(std::strtoul(c.labels().at(labels::kJob).c_str(), nullptr, 10));
    auto lock = lock_job(job);
    if (auto s = remove_containers({c}, out); !s) return Error{s.error()};
  }
  log_info("removed named container " + name + " of uid " + std::to_string(uid));
  return out;
}

Result<v1::ListResponse> StepManager::list(uint32_t job_id, int64_t only_uid) {
  Labels sel = {{labels::kManaged, "true"}};
  if (job_id) sel[labels::kJob] = std::to_string(job_id);
  if (only_uid >= 0) sel[labels::kUid] = std::to_string(only_uid);
  auto containers = cri_.list_containers(sel);
  if (!containers) return Error{containers.error()};
  v1::ListResponse out;
  for (const cri::Container& c : *containers) {
    v1::StepInfo* s = out.add_steps();
    auto label = [&](const char* k) {
      auto it = c.labels().find(k);
      return it == c.labels().end() ? std::string() : it->second;
    };
    s->set_job_id(static_cast<uint32_t>(std::strtoul(label(labels::kJob).c_str(), nullptr, 10)));
    s->set_step_id(static_cast<uint32_t>(std::strtoul(label(labels::kStep).c_str(), nullptr, 10)));
    s->set_uid(static_cast<uint32_t>(std::strtoul(label(labels::kUid).c_str(), nullptr, 10)));
    s->set_image(label(labels::kImage));
    s->set_container_id(c.id());
    s->set_sandbox_id(c.pod_sandbox_id());
    s->set_state(cri::ContainerState_Name(c.state()));
    s->set_created_at_ns(c.created_at());
    s->set_name(label(labels::kName));
  }
  return out;
}

}  // namespace crisp
