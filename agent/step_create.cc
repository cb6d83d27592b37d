// StepManager::create: a step's container, made in named phases. What a phase
// makes is owned by an RAII object (HostArtifacts, ContainerGuard), so any
// failure undoes everything before the error is answered.
#include <signal.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <mutex>

#include "agent/cri/snapshot_client.h"
#include "agent/cri/labels.h"
#include "agent/devices/cdi_hooks.h"
#include "agent/devices/driver_discovery.h"
#include "agent/devices/gpu_plan.h"
#include "agent/devices/gres.h"
#include "agent/host/entrypoint.h"
#include "agent/host/squashfs_mount.h"
#include "agent/host/squashfs_tools.h"
#include "agent/images/enroot_config.h"
#include "agent/host/user_access.h"
#include "agent/host/user_rootfs.h"
#include "agent/images/credentials.h"
#include "agent/step_manager.h"
#include "agent/step_plan.h"
#include "common/files.h"
#include "common/passwd.h"
#include "common/image_ref.h"
#include "common/log.h"
#include "common/mount_spec.h"
#include "common/slurm_ids.h"
#include "common/strings.h"
#include "common/time.h"

namespace crisp {

// The request's slurmstepd has exited (0: a request without one, as crispctl's).
static bool stepd_gone(int pid) { return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH; }

namespace {

v1::BindMount bind_mount(const std::string& source, const std::string& target, bool readonly) {
  v1::BindMount m;
  m.set_source(source);
  m.set_target(target);
  m.set_readonly(readonly);
  return m;
}


}  // namespace

StepManager::Plan StepManager::new_plan(const v1::CreateStepRequest& req) {
  Plan plan;
  plan.named = !req.name().empty();
  // A named container of global scope belongs to no job (job 0).
  plan.scope = {plan.named && req.global_scope() ? 0 : req.job_id(), req.uid(), req.user()};
  plan.creds = {req.uid(), req.gid(), {req.supplementary_gids().begin(), req.supplementary_gids().end()}};
  StepContainerInput& in = plan.in;
  in.job = plan.scope;
  in.step_id = req.step_id();
  in.gid = req.gid();
  in.groups = plan.creds.groups;
  in.stepd_pid = req.stepd_pid();
  in.name = req.name();
  in.readonly_rootfs = req.readonly_rootfs();
  return plan;
}

Result<v1::CreateStepResponse> StepManager::create(const v1::CreateStepRequest& req, const PullWaiter& waiter) {
  // Spares are made only while no step is, nor was a moment ago.
  struct Creating {
    StepManager& m;
    explicit Creating(StepManager& steps) : m(steps) { m.creating_++; }
    ~Creating() {
      m.created_ns_ = now_ns();
      m.creating_--;
    }
  } creating(*this);
  PhaseClock clock;
  auto out = create_in_phases(req, waiter, clock);
  if (!out && out.error_kind() == ErrorKind::kCancelled) settings_.metrics->setup_cancelled();
  else if (!out) settings_.metrics->setup_failed(clock.phase());
  return out;
}

Result<v1::CreateStepResponse> StepManager::create_in_phases(const v1::CreateStepRequest& req, const PullWaiter& waiter,
                                                             PhaseClock& clock) {
  Plan plan = new_plan(req);
  plan.waiter = &waiter;
  if (plan.named) {
    clock.begin("join");
    auto lock = lock_job(plan.scope.job_id);
    auto joined = join_named(plan.scope, req);
    if (!joined) return joined.take_error();
    if (*joined) return finish(req, **joined, SetupKind::kNamedJoin, clock);
  }
  using Phase = Status (StepManager::*)(const v1::CreateStepRequest&, Plan&);
  for (auto [phase, name] : {std::pair<Phase, const char*>{&StepManager::resolve_user_paths, "paths"},
                             {&StepManager::plan_devices, "devices"},
                             {req.image_file().empty() ? &StepManager::pull_image : &StepManager::mount_image_file, "image"}}) {
    clock.begin(name);
    if (auto s = (this->*phase)(req, plan); !s) return s.take_error();
  }

  // Unnamed steps touch only their own container: they are made side by side.
  std::optional<SlotLock<std::unique_lock<std::shared_mutex>>> whole_job;
  std::optional<SlotLock<std::shared_lock<std::shared_mutex>>> shared_job;
  clock.begin("host");
  if (plan.named) {
    whole_job.emplace(lock_job(plan.scope.job_id));
    // Another step of the job may have made it while the image was pulled.
    auto joined = join_named(plan.scope, req);
    if (!joined) return joined.take_error();
    if (*joined) return finish(req, **joined, SetupKind::kNamedJoin, clock);
  } else {
    shared_job.emplace(share_job(plan.scope.job_id));
    remove_stale_step(req);
  }
  HostArtifacts host;
  if (auto s = prepare_host(req, plan, host); !s) return s.take_error();
  auto id = claim_spare(req, plan, clock);
  if (id && id->empty()) id = make_container(req, plan, clock);
  if (!id) return id.take_error();
  ContainerGuard guard(*this, *id);
  if (!plan.claimed)
    if (auto s = start_made(req, plan, clock); !s) return s.take_error();
  // A slurmstepd that gave up waiting (or died: its job cancelled, whose epilog
  // may already have run) will never use nor release this; a named container
  // would outlive its job.
  clock.begin("session");
  if (stepd_gone(req.stepd_pid()))
    return fail(ErrorKind::kCancelled, "slurmstepd " + std::to_string(req.stepd_pid()) + " exited while its container was made");
  auto started = process_start_time(plan.pid);
  if (!started) return fail("the step's container exited as it was made: " + started.error());
  if (auto s = start_step_session(plan.container_id, plan.pid, req, plan.out); !s) return s.take_error();
  guard.keep();
  host.keep();
  keep_holder(plan.container_id, plan.pid, *started);
  plan.out.set_holder_pid(plan.pid);
  plan.out.set_holder_start_time(*started);
  plan.out.set_container_id(plan.container_id);
  want_spare(req, plan);
  return finish(req, plan.out, plan.claimed ? SetupKind::kSpareClaim : SetupKind::kNew, clock, plan.named);
}

Status StepManager::start_made(const v1::CreateStepRequest& req, Plan& plan, PhaseClock& clock) {
  clock.begin("start");
  if (auto s = start_container(plan); !s) return s;
  clock.begin("holder");
  if (auto s = wait_for_holder(req, plan, plan.pid, plan.in.entrypoint); !s) return s;
  clock.begin("rootfs");
  if (auto s = run_hooks(plan); !s) return s;
  // Last, so the hooks and the entrypoint saw the root containerd made.
  if (auto s = give_rootfs(req, plan); !s) return s;
  if (!plan.file_entrypoint.empty()) clock.begin("entrypoint");
  return run_file_entrypoint(req, plan);
}

v1::CreateStepResponse StepManager::finish(const v1::CreateStepRequest& req, v1::CreateStepResponse out, SetupKind kind,
                                           PhaseClock& clock, bool named) {
  clock.end();
  double seconds = clock.seconds();
  for (const auto& [phase, s] : clock.laps()) settings_.metrics->setup_phase(kind, phase, s);
  settings_.metrics->setup_done(kind, seconds);
  auto ms = static_cast<int64_t>(seconds * 1000);
  out.set_setup_ms(static_cast<uint32_t>(ms));
  created++;
  std::string what = kind == SetupKind::kNamedJoin    ? "joined named"
                     : kind == SetupKind::kSpareClaim ? "claimed spare"
                     : named                          ? "created named"
                                                      : "created";
  log_info(what + " container " + out.container_id().substr(0, 12) + " for " + slurm::step_text(req.job_id(), req.step_id()) +
           " (uid " + std::to_string(req.uid()) + ", " + out.image() + ") in " + std::to_string(ms) + " ms" +
           (clock.text().empty() ? "" : " (" + clock.text() + ")"));
  return out;
}

Result<std::optional<cri::Container>> StepManager::find_named(const JobIdentity& scope, const std::string& name) {
  Labels sel = job_selector(scope.job_id);
  sel[labels::kUid] = std::to_string(scope.uid);
  sel[labels::kName] = name;
  auto found = cri_.list_containers(sel);
  if (!found) return found.take_error();
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

Result<std::optional<v1::CreateStepResponse>> StepManager::join_named(const JobIdentity& scope,
                                                                      const v1::CreateStepRequest& req) {
  auto found = find_named(scope, req.name());
  if (found && !*found) found = find_step_container(req.uid(), req.name());
  if (!found) return found.take_error();
  if (!*found) {
    if (req.name_mode() == v1::NAME_EXEC)
      return fail("there is no container named " + req.name() + " on this node: --container-name=" + req.name() +
                  ":exec only joins one made by an earlier step");
    if (req.image().empty() && req.image_file().empty())
      return fail("there is no container named " + req.name() + " on this node: add --container-image to create it");
    return std::optional<v1::CreateStepResponse>();
  }
  if (req.name_mode() == v1::NAME_CREATE)
    return fail("a container named " + req.name() + " already exists on this node (--container-name=" + req.name() +
                ":create makes a new one only)");
  auto out = attach(**found, req);
  if (!out) return out.take_error();
  return std::optional<v1::CreateStepResponse>(*out);
}

Result<v1::CreateStepResponse> StepManager::attach(const cri::Container& c, const v1::CreateStepRequest& req) {
  auto pid = holder_pid(c.id());
  if (!pid) return fail("the container named " + req.name() + " cannot be joined: " + pid.error());
  auto started = process_start_time(*pid);
  if (!started) return fail("the container named " + req.name() + " cannot be joined: " + started.error());
  v1::CreateStepResponse out;
  out.set_attached(true);
  out.set_holder_pid(*pid);
  out.set_holder_start_time(*started);
  out.set_container_id(c.id());
  std::string image = labels::value_of(c.labels(), labels::kImage);
  out.set_image(image);
  // A squashfs image's Env is its container's, as an entrypoint's is; its WorkingDir a label.
  bool file = labels::value_of(c.labels(), labels::kImageFile) == "true";
  auto env = file || c.labels().count(labels::kEntrypoint) ? holder_environment(*pid)
                                                           : Result<std::vector<std::string>>(fail(""));
  if (file && !env) return fail("the container named " + req.name() + " cannot be joined: " + env.error());
  ImageConfig config;
  if (file) {
    config.working_dir = labels::value_of(c.labels(), labels::kImageWorkdir);
  } else {
    auto found = images_.config_of(image, {});
    if (!found) return found.take_error();
    config = *found;
  }
  for (const std::string& e : env ? *env : config.env) out.add_image_env(e);
  out.set_image_workdir(config.working_dir);
  if (auto s = enter_container(c.id(), *pid, req, out); !s) return s.take_error();
  return out;
}

Result<int> StepManager::holder_pid(const std::string& container_id) {
  auto status = cri_.container_status(container_id, true);
  if (!status) return status.take_error();
  return parse_container_pid({status->info().begin(), status->info().end()});
}

// The user's own paths, resolved with their credentials: what they name must be theirs to read.
Status StepManager::resolve_user_paths(const v1::CreateStepRequest& req, Plan& plan) {
  for (const v1::BindMount& m : req.mounts()) {
    if (m.tmpfs()) {
      plan.tmpfs_count++;
      continue;
    }
    auto src = resolve_as_user(plan.creds, m.source());
    if (!src && src.error_kind() == ErrorKind::kNotFound)
      return fail("--container-mounts: source path does not exist: " + m.source());
    if (!src) return fail("mount source " + src.error() + ": you must be able to reach it");
    plan.user_mounts.emplace_back(std::move(*src), m);
  }
  auto home = home_of(req.uid());
  if (home) plan.home = *home;
  if (req.mount_home()) {
    // The job's $HOME, as enroot mounts it; resolved as the user like any source.
    if (req.home().empty() && !home) return home.take_error();
    std::string path = req.home().empty() ? *home : req.home();
    auto dir = resolve_as_user(plan.creds, path);
    if (!dir) return fail("--container-mount-home: your home directory " + dir.error());
    plan.user_mounts.emplace_back(std::move(*dir), bind_mount("", req.remap_root() ? "/root" : path, false));
  }
  // slurmd spooled it; slurmstepd (root) vouches for the path.
  if (!req.batch_script().empty())
    plan.in.mounts.push_back(bind_mount(req.batch_script(), req.batch_script(), true));
  if (!req.job_workdir().empty()) {
    // A working directory the user cannot reach stays unmounted; slurmstepd then reports it.
    if (auto wd = resolve_as_user(plan.creds, req.job_workdir()); wd && wd->is_directory) {
      plan.in.workdir = wd->path;
      plan.in.workdir_alias = normalize_path(req.job_workdir());
      plan.workdir = std::move(*wd);
    }
  }
  return Ok{};
}

Status StepManager::plan_devices(const v1::CreateStepRequest& req, Plan& plan) {
  auto add_devices = [&](const std::vector<PlannedDevice>& devices, const std::vector<std::string>& env) {
    for (const PlannedDevice& d : devices) {
      cri::Device dev;
      dev.set_host_path(d.host_path);
      dev.set_container_path(d.container_path);
      dev.set_permissions(d.permissions);
      plan.in.devices.push_back(dev);
    }
    for (const std::string& e : env) plan.out.add_device_env(e);
  };
  auto indices = granted_gpus(req);
  if (!indices) return indices.take_error();
  if (!indices->empty()) {
    auto gpus = plan_gpus(settings_.devices, settings_.node.node_name, *indices);
    if (!gpus) return gpus.take_error();
    add_devices(gpus->devices, gpus->env);
    // The admin's CDI spec names these host paths: no user check applies.
    for (const PlannedMount& m : gpus->mounts)
      plan.in.mounts.push_back(bind_mount(m.host_path, m.container_path, m.readonly));
    for (uint32_t g : gpus->gids) plan.in.groups.push_back(g);
    plan.gpu_bdfs = gpus->gpu_bdfs;
    plan.driver_mounted = gpus->driver_mounted;
    plan.hooks = gpus->hooks;
  }
  plan.rdma = plan_rdma(settings_.devices, settings_.hca_policy, plan.gpu_bdfs);
  add_devices(plan.rdma.devices, plan.rdma.env);
  return Ok{};
}

// The step's GPUs: those the job's environment names (SLURM_STEP_GPUS, which
// the user can set) if slurmctld says the step holds GPUs, and among the job's
// indices on this node where slurmctld knows them.
Result<std::vector<unsigned>> StepManager::granted_gpus(const v1::CreateStepRequest& req) {
  auto named = parse_index_list(req.gpus());
  if (!named || named->empty()) return named;
  if (!settings_.step_gpus) return fail("crispd cannot confirm the step's GPUs: it has no Slurm controller to ask");
  auto said = settings_.step_gpus(req.job_id(), req.step_id(), settings_.node.node_name);
  if (!said) return fail("cannot confirm the step's GPUs with slurmctld (" + said.error() + "): try again");
  std::vector<unsigned> granted;
  std::string refused;
  for (unsigned i : *named) {
    bool ok = said->has && (!said->within || std::find(said->within->begin(), said->within->end(), i) != said->within->end());
    if (ok) granted.push_back(i);
    else refused += (refused.empty() ? "" : ",") + std::to_string(i);
  }
  if (!refused.empty())
    log_warn(slurm::step_text(req.job_id(), req.step_id()) + " (uid " + std::to_string(req.uid()) +
             "): GPU(s) " + refused + " named in its environment are not the step's; not given");
  return granted;
}

// The image, pulled with the user's credentials if the node lacks it, and what its config says.
// A pull is waited for only while the step is alive: scancel or Ctrl-C ends the wait.
Status StepManager::pull_image(const v1::CreateStepRequest& req, Plan& plan) {
  auto ref = parse_image_ref(req.image());
  if (!ref) return ref.take_error();
  plan.ref = *ref;
  std::string image = plan.ref.canonical();
  UserFiles user{plan.creds, plan.home.value_or("")};
  PullWaiter waiter = step_waiter(req, *plan.waiter);
  waiter.uid = req.uid();
  auto config = images_.ensure(image, user_credentials(plan.home ? &user : nullptr, plan.ref.registry, req.registry_user()),
                               waiter);
  if (!config) return config.take_error();
  use_image_config(image, *config, plan);
  plan.image_id = config->id;
  if (req.entrypoint()) {
    plan.in.entrypoint = config->entrypoint;
    plan.in.env.assign(req.entrypoint_env().begin(), req.entrypoint_env().end());
  }
  return Ok{};
}

ImageStore::CredentialSource StepManager::user_credentials(const UserFiles* user, const std::string& registry,
                                                           const std::string& login) const {
  return [this, user, registry, login] { return credentials_for(user, settings_.registry_auth_file, registry, login); };
}

// The request's own stop (its client left) and, every few seconds, slurmctld's word on the step.
PullWaiter StepManager::step_waiter(const v1::CreateStepRequest& req, const PullWaiter& request) const {
  PullWaiter w = request;
  auto last = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  w.stop = [this, req_stop = request.stop, last, job = req.job_id(), step = req.step_id(),
            stepd = req.stepd_pid()]() -> std::optional<std::string> {
    if (req_stop)
      if (auto why = req_stop()) return why;
    if (stepd_gone(stepd)) return "its slurmstepd exited";
    auto now = std::chrono::steady_clock::now();
    if (!settings_.step_liveness || now - *last < kLivenessEvery) return std::nullopt;
    *last = now;
    if (settings_.step_liveness(job, step) == JobLiveness::kOver)
      return slurm::step_text(job, step) + " was cancelled while its image was pulled";
    return std::nullopt;
  };
  return w;
}

Result<v1::PrefetchResponse> StepManager::prefetch(const v1::PrefetchRequest& req) {
  auto ref = parse_image_ref(req.image());
  if (!ref) return ref.take_error();
  auto entry = lookup_uid(req.uid());
  if (!entry) return fail("uid " + std::to_string(req.uid()) + " has no entry in the password database");
  UserCreds creds{req.uid(), req.gid(), lookup_groups(entry->name, req.gid())};
  UserFiles user{creds, entry->home};
  auto pulling = images_.prefetch(ref->canonical(),
                                  user_credentials(entry->home.empty() ? nullptr : &user, ref->registry, req.registry_user()),
                                  req.uid());
  if (!pulling) return pulling.take_error();
  prefetches++;
  if (*pulling) prefetch_pulls++;
  v1::PrefetchResponse out;
  out.set_image_ref(ref->canonical());
  out.set_pulling(*pulling);
  return out;
}

void StepManager::use_image_config(const std::string& image, const ImageConfig& config, Plan& plan) {
  plan.out.set_image(image);
  for (const std::string& e : config.env) plan.out.add_image_env(e);
  plan.out.set_image_workdir(config.working_dir);
  if (plan.driver_mounted)
    for (const std::string& e : driver_path_env(config.env)) plan.out.add_device_env(e);
  plan.in.image = image;
}

// A squashfs image the user names (Pyxis's --container-image=PATH): opened with
// their rights, checked, mounted; its Env and WorkingDir as enroot's import keeps them.
Status StepManager::mount_image_file(const v1::CreateStepRequest& req, Plan& plan) {
  const std::string& path = req.image_file();
  if (path.front() != '/') return fail("image file " + path + ": crispd was not told the job's directory: give an absolute path");
  auto file = open_as_user(plan.creds, path);
  if (!file && file.error_kind() == ErrorKind::kNotFound) return fail("image file " + path + " does not exist");
  if (!file) return fail("cannot open the image file " + file.error());
  struct stat st {};
  if (fstat(file->fd.get(), &st) != 0) return fail("image file " + path + ": " + errno_text(errno));
  if (S_ISDIR(st.st_mode)) return fail("image file " + path + " is a directory, not a squashfs file");
  if (!S_ISREG(st.st_mode)) return fail("image file " + path + " is not a regular file");
  std::string head(kSquashfsSuperblockSize, '\0');
  ssize_t n = pread(file->fd.get(), head.data(), head.size(), 0);
  head.resize(n > 0 ? static_cast<size_t>(n) : 0);
  auto sb = parse_squashfs_superblock(head, static_cast<uint64_t>(st.st_size));
  if (!sb) return fail("image file " + path + ": " + sb.error());
  bool acl = fgetxattr(file->fd.get(), "system.posix_acl_access", nullptr, 0) >= 0;
  struct statfs fs {};
  if (fstatfs(file->fd.get(), &fs) != 0) return fail("image file " + path + ": " + errno_text(errno));
  ImageConfig config;
  std::string rc;
  if (kernel_may_mount(st, acl, static_cast<int64_t>(fs.f_type), settings_.squashfs_any_owner)) {
    auto root = mount_squashfs(file->fd.get(), path);
    if (!root) return fail("image file " + path + ": " + root.error());
    config.env = parse_enroot_environment(read_image_file(root->get(), "/etc/environment", kImageConfigFileMax));
    rc = read_image_file(root->get(), "/etc/rc", kImageConfigFileMax);
    plan.image_root = std::move(*root);
  } else {
    // One a user can have made: read and extracted by unsquashfs with their ids, never parsed by the kernel.
    auto read = [&](const char* name) {
      return cat_as_user(plan.creds, file->fd.get(), name, kImageConfigFileMax, std::chrono::seconds(30));
    };
    config.env = parse_enroot_environment(read("etc/environment"));
    rc = read("etc/rc");
    plan.image_to_extract = std::move(file->fd);
  }
  config.working_dir = parse_enroot_workdir(rc);
  if (req.entrypoint()) plan.file_entrypoint = parse_enroot_entrypoint(rc);
  use_image_config(path, config, plan);
  plan.in.env = config.env;
  plan.in.image_workdir = config.working_dir;
  return Ok{};
}

// tmpfs mounts, the HCA view and the entrypoint's log file: made now, owned by host until the create succeeds.
Status StepManager::prepare_host(const v1::CreateStepRequest& req, Plan& plan, HostArtifacts& host) {
  StepContainerInput& in = plan.in;
  plan.key = std::to_string(plan.scope.job_id) + "." +
             (plan.named ? std::to_string(req.uid()) + "." + req.name() : slurm::step_name(req.step_id()));
  if (auto s = stage_mounts(req, plan, host); !s) return s;
  // Only the chosen HCAs show in /sys/class/infiniband, where the node has that class.
  struct stat ib {};
  const std::vector<Hca>& hcas = plan.rdma.hcas;
  if (!hcas.empty() && hcas.size() < list_hcas(settings_.devices).size() &&
      stat(settings_.container_sysfs_class.c_str(), &ib) == 0) {
    std::vector<std::string> names;
    for (const Hca& h : hcas) names.push_back(h.name);
    if (auto s = host.make_hca_view(settings_.container_sysfs_class, names, settings_.tmpfs_base + "-hca/" + plan.key); !s)
      return s;
    in.hca_view = host.hca_view();
  }
  if (!in.entrypoint.empty() || !plan.file_entrypoint.empty()) {
    // Its output explains a failing entrypoint, and is shown on request.
    if (auto s = prepare_log_directory(kLogDirectory, kLogDirectorySize); !s) return s;
    in.log_path = plan.key + ".log";
    host.add_file(std::string(kLogDirectory) + "/" + in.log_path);
  }
  return Ok{};
}

// The user's sources, cloned where containerd cannot be misled, and the tmpfs mounts.
Status StepManager::stage_mounts(const v1::CreateStepRequest& req, Plan& plan, HostArtifacts& host) {
  StepContainerInput& in = plan.in;
  if (plan.user_mounts.empty() && !plan.workdir && plan.tmpfs_count == 0) return Ok{};
  if (auto s = host.open_mount_root(settings_.tmpfs_base, plan.key); !s) return s;
  in.tmpfs_root = host.mount_root();
  for (auto& [source, mount] : plan.user_mounts) {
    auto at = host.stage(source);
    if (!at) return at.take_error();
    in.mounts.push_back(mount);
    in.mounts.back().set_source(*at);
  }
  if (plan.workdir) {
    auto at = host.stage(*plan.workdir);
    if (!at) return at.take_error();
    in.workdir_source = *at;
  }
  for (const v1::BindMount& m : req.mounts()) {
    if (!m.tmpfs()) continue;
    if (auto s = check_tmpfs_options(m.tmpfs_options()); !s) return s;
    std::string options = "size=" + settings_.tmpfs_size + (m.tmpfs_options().empty() ? "" : "," + m.tmpfs_options());
    auto dir = host.make_tmpfs(req.uid(), req.gid(), options);
    if (!dir) return dir.take_error();
    in.tmpfs.emplace_back(*dir, m.target());
  }
  return Ok{};
}

// An unnamed step's leftover container of the same id (a crispd restarted mid-step).
void StepManager::remove_stale_step(const v1::CreateStepRequest& req) {
  Labels sel = job_selector(req.job_id());
  sel[labels::kStep] = std::to_string(req.step_id());
  auto stale = find_containers(sel);
  if (!stale || stale->empty()) return;
  log_warn("removing " + std::to_string(stale->size()) + " stale container(s) of " + slurm::step_text(req.job_id(), req.step_id()));
  v1::ReleaseResponse undo;
  (void)remove_containers(*stale, undo);
}

// The container in the user's sandbox (made if missing); an empty sandbox is left to the sweep on failure.
Result<std::string> StepManager::create_in_user_sandbox(uint32_t uid, const std::string& user,
                                                        const StepContainerInput& in, PhaseClock* clock) {
  // Under the user's lock until the container is in the sandbox: an empty one may be the sweep's.
  auto user_lock = lock_user(uid);
  auto sandbox = find_or_run_user_sandbox(uid, user);
  if (!sandbox) return sandbox.take_error();
  if (clock) clock->begin("create");
  auto id = cri_.create_container(sandbox->id(), build_step_container(in, settings_.node),
                                  build_user_sandbox_config(uid, user, settings_.node));
  touch_sandbox(sandbox->id());
  if (!id) return fail("cannot create the step's container from " + in.image + ": " + id.error());
  return id;
}

Result<std::string> StepManager::make_container(const v1::CreateStepRequest& req, Plan& plan, PhaseClock& clock) {
  clock.begin("sandbox");
  if (plan.image_root || plan.image_to_extract) {
    auto info = cri_.status_info();
    auto image = info ? parse_sandbox_image(*info) : Result<std::string>(info.take_error());
    if (!image && !settings_.sandbox_image.empty()) image = settings_.sandbox_image;
    // Present as containerd's sandboxes need it: pulled as RunPodSandbox would, if it is gone.
    if (image)
      if (auto present = images_.ensure(*image); !present) image = present.take_error();
    if (!image)
      return fail("cannot find the runtime's sandbox image for a squashfs image's container: " + image.error() +
                  " (containerd 2.x does not report it: give crispd --sandbox-image)");
    plan.in.cri_image = *image;
  }
  auto id = create_in_user_sandbox(req.uid(), req.user(), plan.in, &clock);
  if (!id) return id.take_error();
  plan.container_id = *id;
  return id;
}

Result<int> StepManager::start_and_find_holder(const std::string& id, const std::string& image) {
  if (auto s = cri_.start_container(id); !s) return fail("cannot start the step's container from " + image + ": " + s.error());
  auto pid = holder_pid(id);
  if (!pid) return fail("the step's container did not start: " + pid.error());
  return pid;
}

Status StepManager::start_container(Plan& plan) {
  auto pid = start_and_find_holder(plan.container_id, plan.in.image);
  if (!pid) return pid.take_error();
  plan.pid = *pid;
  return Ok{};
}

// runc's init execs the container's process only after StartContainer has
// returned, and an entrypoint runs before it execs the holder: wait for it.
Status StepManager::wait_for_holder(const v1::CreateStepRequest& req, Plan& plan, int pid,
                                    const std::vector<std::string>& entrypoint) {
  const StepContainerInput& in = plan.in;
  if (entrypoint.empty()) {
    if (auto ran = await_holder(pid, settings_.holder_exe, std::chrono::seconds(10)); !ran)
      return fail("the step's container " + ran.error());
    return Ok{};
  }
  std::string log_path = std::string(kLogDirectory) + "/" + in.log_path;
  CriLogTail tail(log_path, kEntrypointLogKept, [&] { return cri_.reopen_container_log(plan.container_id); });
  auto ran = await_holder(pid, settings_.holder_exe, settings_.entrypoint_timeout, [&] { tail.rotate_if_large(); });
  std::string log = tail.messages();
  if (!ran)
    return fail("the image's entrypoint " + join(entrypoint, " ") + " " + ran.error() +
                " (it must end with exec \"$@\")" + (log.empty() ? "" : "; its output ends: " + last_lines(log, 10, 2000)));
  // What the container writes from now on (a background process of the entrypoint's) is kept nowhere.
  if (auto s = silence_cri_log(log_path); !s) return s;
  if (auto s = cri_.reopen_container_log(plan.container_id); !s)
    return fail("cannot stop keeping the output of the container: " + s.error());
  unlink(log_path.c_str());
  if (req.entrypoint_log()) plan.out.set_entrypoint_log(log);
  auto env = holder_environment(pid);
  if (!env) return fail("cannot read the environment the entrypoint left: " + env.error());
  plan.out.clear_image_env();
  for (const std::string& e : *env) plan.out.add_image_env(e);
  return Ok{};
}

// A squashfs image's entrypoint, in the file's root once it is the container's: it execs a
// second holder, whose environment is the step's, then that holder goes (SIGTERM).
Status StepManager::run_file_entrypoint(const v1::CreateStepRequest& req, Plan& plan) {
  if (plan.file_entrypoint.empty()) return Ok{};
  RootEntrypoint e{plan.pid, req.uid(), req.gid(), plan.creds.groups, plan.file_entrypoint, plan.in.env};
  e.argv.push_back(kHolderTarget);
  e.argv.push_back("0");
  for (const std::string& kv : req.entrypoint_env()) {  // the --container-env names, over the image's
    std::string name = kv.substr(0, kv.find('=') + 1);
    std::erase_if(e.env, [&](const std::string& have) { return have.starts_with(name); });
    e.env.push_back(kv);
  }
  auto pid = start_entrypoint_in_root(e);
  if (!pid) return fail("cannot run the image's entrypoint: " + pid.error());
  Status ran = wait_for_holder(req, plan, *pid, plan.file_entrypoint);
  kill(*pid, ran ? SIGTERM : SIGKILL);
  while (waitpid(*pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  return ran;
}

// The root filesystem becomes the user's, with them in its /etc/passwd and /etc/group.
Status StepManager::give_rootfs(const v1::CreateStepRequest& req, Plan& plan) {
  RootfsRequest r;
  r.pid = plan.pid;
  r.user.uid = req.uid();
  r.user.gid = req.gid();
  auto pw = lookup_uid(req.uid());
  r.user.user = pw ? pw->name : req.user();
  r.user.home = pw ? pw->home : "";
  r.user.gecos = pw ? pw->gecos : "";
  r.user.shell = pw ? pw->shell : "";
  r.user.group = lookup_gid(req.gid()).value_or(r.user.user);
  r.readonly = req.readonly_rootfs();
  r.stage = settings_.tmpfs_base + "-rootfs";
  r.image_root = plan.image_root.get();
  r.image_to_extract = plan.image_to_extract.get();
  // The layers as containerd holds them: the container's own processes are the user's.
  if (settings_.snapshots) {
    auto layers = settings_.snapshots->mounts(plan.container_id);
    if (!layers) return fail("cannot ask containerd for the container's layers: " + layers.error());
    r.snapshot = std::move(*layers);
  }
  const cri::ContainerConfig made = build_step_container(plan.in, settings_.node);
  for (const cri::Mount& m : made.mounts()) r.bind_sources.push_back(m.host_path());
  // The node's timezone: the admin's file, read as root.
  if (auto tz = read_text("/etc/localtime", 1u << 20)) r.localtime = *tz;
  Status given = settings_.give_rootfs(r);
  plan.rootfs_given = given.ok();
  // A squashfs image exists only in the new root: without it the container would run the sandbox's.
  if (!given && (plan.image_root || plan.image_to_extract)) return fail("cannot make the squashfs image the container's root: " + given.error());
  if (!given && given.error_kind() == ErrorKind::kUnsupported) {
    // The step still runs, in root's files, as before crisp did this; the admin hears once.
    static std::once_flag said;
    std::call_once(said, [&] { log_warn("containers keep root's files on this node: " + given.error()); });
    return Ok{};
  }
  return given;
}

Status StepManager::run_hooks(const Plan& plan) {
  for (const CdiHook& hook : plan.hooks)
    if (auto s = run_cdi_hook(hook, oci_state_json(plan.container_id, plan.pid,
                                                   settings_.bundle_root + "/" + plan.container_id));
        !s)
      return s;
  return Ok{};
}

}  // namespace crisp
