// The steps' holder containers: one per step, removed at the step's end, in
// their user's sandbox on the node. That sandbox is made by the user's first
// step and kept while it holds containers, then for --sandbox-grace seconds
// for the user's next job (the sweep removes it), so RunPodSandbox is paid
// once per user and node, not per job.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "agent/cri/cri_client.h"
#include "agent/cri/spec_builder.h"
#include "agent/devices/device_roots.h"
#include "agent/devices/rdma_plan.h"
#include "agent/host/claim_mounts.h"
#include "agent/host/holder_process.h"
#include "agent/host/step_session.h"
#include "agent/host/host_artifacts.h"
#include "agent/host/user_rootfs.h"
#include "agent/host/host_mounts.h"
#include "agent/host/squashfs_tools.h"
#include "agent/host/work_cgroup.h"
#include "agent/images/credentials.h"
#include "agent/images/image_store.h"
#include "agent/images/import_slots.h"
#include "agent/metrics/metrics.h"
#include "agent/slurm_jobs.h"
#include "agent/spares/claims.h"
#include "agent/spares/spare_pool.h"
#include "crisp.pb.h"

namespace crisp {

class SnapshotClient;

// The entrypoints' CRI logs: the tmpfs they share, and what is kept of each.
inline constexpr uint64_t kLogDirectorySize = 64u << 20;
inline constexpr size_t kEntrypointLogKept = 1u << 20;
// The most crispd reads of a squashfs image's /etc/environment or /etc/rc.
inline constexpr size_t kImageConfigFileMax = 1u << 20;

struct StepSettings {
  NodeSettings node;
  std::string runtime_handler;
  int64_t stop_timeout_s = 2;
  std::chrono::seconds entrypoint_timeout{60};
  std::string registry_auth_file;  // the node's Docker-format credentials; empty: none
  std::string holder_exe = kHolderTarget;  // the holder as /proc/PID/exe shows it
  DeviceRoots devices;
  HcaPolicy hca_policy = HcaPolicy::kAll;
  // The sysfs the containers see (runc mounts the host's): where the HCA view must cover.
  std::string container_sysfs_class = "/sys/class/infiniband";
  // Where each container's host mounts (tmpfs, staged user sources) are made,
  // and, beside it with -hca, HCA views.
  std::string tmpfs_base = kMountsBase;
  // The size limit of each tmpfs of --container-mounts, in tmpfs's terms.
  std::string tmpfs_size = "25%";
  // The kernel mounts squashfs images of any owner (crispd --squashfs-any-owner),
  // not only those root owns and alone may write (squashfs_mount.h).
  bool squashfs_any_owner = false;
  // The runtime's sandbox image where its CRI status does not name it (containerd 2.x keeps it in
  // its images plugin): a squashfs image's container is made from it (crispd --sandbox-image).
  std::string sandbox_image;
  // The longest a --container-save or crispctl import may take (mksquashfs).
  std::chrono::seconds save_timeout{1800};
  // Where imports' and saves' mksquashfs run (crispd --squashfs-cgroup …; made by
  // crispd.cc, empty in the tests: crispd's own), and how many imports at once.
  WorkLimits squashfs_limits;
  WorkCgroup squashfs_cgroup;
  size_t imports_per_user = 1, imports_per_node = 2;
  // What slurmctld says of a step's GPUs on this node (slurm_step_gpus); unset:
  // a step that names GPUs is refused.
  std::function<Result<StepGpus>(uint32_t job, uint32_t step, const std::string& node)> step_gpus;
  // Whether slurmctld still runs a step (slurm_step_liveness), asked while its image is
  // pulled; unset: not asked.
  std::function<JobLiveness(uint32_t job, uint32_t step)> step_liveness;
  // containerd's task bundles, for CDI hooks' OCI state: <state>/io.containerd.runtime.v2.task/k8s.io/<id>.
  std::string bundle_root = "/run/crisp/containerd/io.containerd.runtime.v2.task/k8s.io";
  // containerd's snapshot service: a container's layers, an image's view for imports;
  // null (the fake CRI's tests): none, and no root is given nor image imported.
  SnapshotClient* snapshots = nullptr;
  // Makes the container's root filesystem the user's (user_rootfs.h); a seam for the fake CRI's tests.
  std::function<Status(const RootfsRequest&)> give_rootfs = give_rootfs_to_user;
  // Ends a holder (its pidfd) and returns once it has exited; a seam for the fake CRI's
  // tests, whose "holder" is the test itself.
  std::function<void(int pidfd)> end_holder = end_process;
  // Starts a step's namespace keeper (step_session.h); a seam for the fake CRI's tests too.
  std::function<Result<SessionKeeper>(const SessionRequest&)> start_session = crisp::start_session;
  // Spare containers made ahead for a user's next step (agent/spares/); per_node 0: none.
  SpareLimits spares;
  std::string claims_dir;  // where the claims of spares are kept; empty: in memory alone
  // Attaches a claimed spare's mounts and devices (claim_mounts.h); a seam for the fake CRI's tests.
  std::function<Status(const AttachRequest&)> attach = attach_in_container;
  // Where setup times and failures are counted (crispd's, served to Prometheus).
  std::shared_ptr<Metrics> metrics = std::make_shared<Metrics>();
};

// A lock that keeps its mutex alive: a job's mutex leaves the map at the job's end.
template <class Lock>
struct SlotLock {
  explicit SlotLock(std::shared_ptr<std::shared_mutex> m) : mutex(std::move(m)), lock(*mutex) {}
  void unlock() { lock.unlock(); }
  std::shared_ptr<std::shared_mutex> mutex;
  Lock lock;
};

class StepManager {
 public:
  // Reads the claims of spares a previous crispd left, and starts the thread that makes spares.
  StepManager(CriClient& cri, ImageStore& images, StepSettings settings);
  // The spares still unclaimed are removed.
  ~StepManager();

  // Makes (or joins, for a named container) the step's container; on any
  // failure nothing it made is left. In step_create.cc, phase by phase.
  // waiter: the request's (progress lines, the client gone); a pull is also
  // left when slurmctld says the step is over.
  Result<v1::CreateStepResponse> create(const v1::CreateStepRequest& req, const PullWaiter& waiter = {});
  // The job prolog's: start pulling the image with the user's credentials, answered at once.
  Result<v1::PrefetchResponse> prefetch(const v1::PrefetchRequest& req);
  Result<v1::ReleaseResponse> release_step(uint32_t job_id, uint32_t step_id);
  Result<v1::ReleaseResponse> release_job(uint32_t job_id);
  // The first half of a job's end, what its epilog waits for: no process of the job is
  // left on the node (its containers' holders, and what named ones left in its cgroups).
  // containerd's own stop and removal, 70 ms a container, is release_job's, after.
  Status end_job_processes(uint32_t job_id);
  Result<v1::ReleaseResponse> remove_named(uint32_t uid, const std::string& name);
  // --container-save (step_save.cc).
  Result<v1::SaveStepResponse> save_step(const v1::SaveStepRequest& req);
  // crispctl import: image as a squashfs at path, the caller's file (image_import.cc).
  Result<v1::ImportResponse> import_image(uint32_t uid, uint32_t gid, const std::string& image, const std::string& path,
                                          const PullWaiter& waiter = {});
  // only_uid < 0: every job's steps.
  Result<v1::ListResponse> list(uint32_t job_id, int64_t only_uid);

  // Whole: a job's named containers, its end, the sweep. Shared: one of its
  // unnamed steps, which touches only its own container.
  SlotLock<std::unique_lock<std::shared_mutex>> lock_job(uint32_t job_id);
  SlotLock<std::shared_lock<std::shared_mutex>> share_job(uint32_t job_id);
  // Serializes finding or making a user's sandbox with its removal by the sweep.
  SlotLock<std::unique_lock<std::shared_mutex>> lock_user(uint32_t uid);
  // When a container was last made or removed in the sandbox (its creation
  // if not since this crispd started), in ns since the epoch.
  int64_t last_used_ns(const cri::PodSandbox& sandbox);
  // Removes the containers (stopping them first) and what their labels name on the host.
  Status remove_containers(const std::vector<cri::Container>& containers, v1::ReleaseResponse& out);
  Status remove_sandbox_if_empty(const cri::PodSandbox& sandbox, bool& removed);

  // Spares (step_spares.cc). A claimed spare's labels are overlaid with its claim's job and
  // step: what every reader of a container's labels must see (find_containers does it).
  Result<std::vector<cri::Container>> find_containers(const Labels& selector);
  bool overlay_claim(cri::Container& c) const { return claims_.overlay(c); }
  // Why the sweep removes a container: cause for the metrics, why for the log; none: kept.
  struct Removal {
    const char* cause = nullptr;
    const char* why = nullptr;
    explicit operator bool() const { return cause != nullptr; }
  };
  // Why the sweep removes c, a spare, if it does (not: claimed by a live step, or ready in the pool).
  Removal spare_to_remove(const cri::Container& c) const;
  // Spares unused for the grace period, removed; how many.
  uint64_t expire_spares();
  // A user's ready spares (nullopt: every user's), removed, and those being made refused; how many.
  uint64_t remove_spares(std::optional<uint32_t> uid);
  size_t spares_ready() const { return pool_.ready(); }

  CriClient& cri() { return cri_; }
  const StepSettings& settings() const { return settings_; }
  std::atomic<uint64_t> created{0}, released{0}, prefetches{0}, prefetch_pulls{0};
  std::atomic<uint64_t> spares_made{0}, spares_claimed{0}, spares_passed_over{0}, spares_removed{0};

 private:
  // Call with lock_user(uid) held.
  Result<cri::PodSandbox> find_or_run_user_sandbox(uint32_t uid, const std::string& user);
  void touch_sandbox(const std::string& sandbox_id);
  // Holders this crispd started, by container id, until their container is removed (a
  // restarted crispd knows none: containerd's stop ends those).
  // Steps using a container while their slurmstepd runs: what a step attaching to it joins.
  struct RunningStep {
    uint32_t job_id = 0, step_id = 0;
    int stepd_pid = 0;
    uint64_t stepd_start = 0;
    std::shared_ptr<SessionKeeper> keeper;  // null: the container's own namespaces
    bool owns_keeper = false, userns = false;
    uint32_t unshare = 0;
  };
  // The newest of the container's steps still running, if any (the others are forgotten).
  std::optional<RunningStep> running_step(const std::string& container_id);
  // Records the step as running in the container, its session in out.
  Status note_running(const std::string& container_id, const v1::CreateStepRequest& req, RunningStep step,
                      v1::CreateStepResponse& out);
  // A new step's own namespaces, if it needs any (remap-root, --container-unshare).
  Status start_step_session(const std::string& container_id, int holder_pid, const v1::CreateStepRequest& req,
                            v1::CreateStepResponse& out);
  // Attaching to a running step, or a fresh session in the container.
  Status enter_container(const std::string& container_id, int holder_pid, const v1::CreateStepRequest& req,
                         v1::CreateStepResponse& out);
  // At a step's, its job's or its container's end: the keepers they own end.
  void forget_step(uint32_t job_id, uint32_t step_id);
  void forget_job_steps(uint32_t job_id);
  void forget_container(const std::string& container_id);
  void forget_running_where(const std::function<bool(const std::string&, const RunningStep&)>& which);
  Result<std::optional<cri::Container>> find_step_container(uint32_t uid, const std::string& name);
  void keep_holder(const std::string& container_id, int pid, uint64_t start_time);
  bool end_holder(const std::string& container_id);  // false: not one this crispd knows
  void forget_holder(const std::string& container_id);
  std::vector<std::string> adopted_cgroups(const cri::Container& c);
  std::shared_ptr<std::shared_mutex> slot(uint64_t key);
  void forget_job_lock(uint32_t job_id);
  Labels job_selector(uint32_t job_id) const;
  // The running container of that name and user in scope (job, or 0: global);
  // others of that name are leftovers and removed.
  Result<std::optional<cri::Container>> find_named(const JobIdentity& scope, const std::string& name);
  Result<v1::CreateStepResponse> attach(const cri::Container& c, const v1::CreateStepRequest& req);
  Result<int> holder_pid(const std::string& container_id);

  struct Plan;       // what one create builds up, phase by phase (step_create.cc)
  class PhaseClock;  // where its time goes, for the log
  // The phases of create, in order.
  static Plan new_plan(const v1::CreateStepRequest& req);
  Result<v1::CreateStepResponse> create_in_phases(const v1::CreateStepRequest& req, const PullWaiter& waiter,
                                                  PhaseClock& clock);
  // Call with lock_job(scope.job_id) held. nullopt: none exists, make one.
  Result<std::optional<v1::CreateStepResponse>> join_named(const JobIdentity& scope, const v1::CreateStepRequest& req);
  Status resolve_user_paths(const v1::CreateStepRequest& req, Plan& plan);
  Status plan_devices(const v1::CreateStepRequest& req, Plan& plan);
  Status pull_image(const v1::CreateStepRequest& req, Plan& plan);
  ImageStore::CredentialSource user_credentials(const UserFiles* user, const std::string& registry,
                                                const std::string& login) const;
  PullWaiter step_waiter(const v1::CreateStepRequest& req, const PullWaiter& request) const;
  static constexpr std::chrono::seconds kLivenessEvery{3};
  Status mount_image_file(const v1::CreateStepRequest& req, Plan& plan);
  static void use_image_config(const std::string& image, const ImageConfig& config, Plan& plan);
  Status prepare_host(const v1::CreateStepRequest& req, Plan& plan, HostArtifacts& host);
  Result<std::vector<unsigned>> granted_gpus(const v1::CreateStepRequest& req);
  Status stage_mounts(const v1::CreateStepRequest& req, Plan& plan, HostArtifacts& host);
  Result<std::string> make_container(const v1::CreateStepRequest& req, Plan& plan, PhaseClock& clock);
  Result<std::string> create_in_user_sandbox(uint32_t uid, const std::string& user, const StepContainerInput& in,
                                             PhaseClock* clock);
  Result<int> start_and_find_holder(const std::string& id, const std::string& image);
  Status start_container(Plan& plan);
  // The image's layers as a squashfs to out, enroot's files on top (image_import.cc).
  Status squash_image(const ImageConfig& config, int out);
  // mksquashfs's bounds for imports and saves: crisp's cgroup, the save timeout.
  SquashfsBounds squashfs_bounds() const;
  Status wait_for_holder(const v1::CreateStepRequest& req, Plan& plan, int pid, const std::vector<std::string>& entrypoint);
  Status run_file_entrypoint(const v1::CreateStepRequest& req, Plan& plan);
  Status run_hooks(const Plan& plan);
  Status give_rootfs(const v1::CreateStepRequest& req, Plan& plan);
  // What a container made for the step does once created: started, its holder, hooks, root, entrypoint.
  Status start_made(const v1::CreateStepRequest& req, Plan& plan, PhaseClock& clock);
  // Spares (step_spares.cc): the key a step's container would have as a spare, if it may be one.
  std::optional<SpareKey> spare_key(const v1::CreateStepRequest& req, const Plan& plan) const;
  // The step's container as a claimed spare, its mounts and devices attached; "": none to claim.
  Result<std::string> claim_spare(const v1::CreateStepRequest& req, Plan& plan, PhaseClock& clock);
  Status attach_spare(const v1::CreateStepRequest& req, const Plan& plan, const SpareKey& key, const Spare& spare);
  // After a step's container was made or claimed: another spare like it, made in the background.
  void want_spare(const v1::CreateStepRequest& req, const Plan& plan);
  Result<Spare> make_spare(const SpareKey& key, const std::string& user);
  void remove_spare(const std::string& container_id);
  void spare_loop();
  // The answer, its setup time logged and counted.
  v1::CreateStepResponse finish(const v1::CreateStepRequest& req, v1::CreateStepResponse out, SetupKind kind,
                                PhaseClock& clock, bool named = false);
  void remove_stale_step(const v1::CreateStepRequest& req);

  CriClient& cri_;
  ImageStore& images_;
  StepSettings settings_;
  ImportSlots imports_;
  std::mutex locks_mu_;
  std::map<uint64_t, std::shared_ptr<std::shared_mutex>> locks_;  // jobs by id, users by 1<<32 | uid
  std::mutex used_mu_;
  std::map<std::string, int64_t> sandbox_used_ns_;
  std::mutex running_mu_;
  std::map<std::string, std::vector<RunningStep>> running_;  // by container id
  std::mutex holders_mu_;
  std::map<std::string, Fd> holders_;  // pidfds
  SparePool pool_;
  ClaimBook claims_;
  int64_t started_ns_ = 0;  // when this crispd started: older unclaimed spares are a previous one's
  std::atomic<int> creating_{0};       // creates under way: spares wait for none
  std::atomic<int64_t> created_ns_{0};  // when the last one ended: its step's tasks start then
  std::mutex spare_mu_;
  std::condition_variable spare_cv_;
  std::deque<std::pair<SpareKey, std::string>> spare_queue_;  // keys to make, with the user's name
  bool spare_stop_ = false;
  std::thread spare_thread_;  // last: it uses everything above
};

// Removes a created container unless kept (a create that succeeded).
class ContainerGuard {
 public:
  ContainerGuard(StepManager& steps, std::string id) : steps_(steps), id_(std::move(id)) {}
  ~ContainerGuard() {
    if (id_.empty()) return;
    cri::Container c;
    c.set_id(id_);
    v1::ReleaseResponse undo;
    (void)steps_.remove_containers({c}, undo);
  }
  ContainerGuard(const ContainerGuard&) = delete;
  ContainerGuard& operator=(const ContainerGuard&) = delete;
  void keep() { id_.clear(); }

 private:
  StepManager& steps_;
  std::string id_;
};

}  // namespace crisp
