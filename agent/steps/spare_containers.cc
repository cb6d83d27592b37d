#include "agent/steps/spare_containers.h"

#include <algorithm>
#include <chrono>

#include "agent/cri/cri_client.h"
#include "agent/cri/labels.h"
#include "agent/metrics/metrics.h"
#include "agent/host/user_rootfs.h"
#include "agent/spares/claim_plan.h"
#include "common/files.h"
#include "common/log.h"
#include "common/passwd.h"
#include "common/slurm_ids.h"
#include "common/time.h"

namespace crisp {
namespace {

// An unclaimed spare the pool does not know (its make failed half way, or a previous
// crispd made it) is removed once this old: one younger may still be being made.
constexpr int64_t kUnknownSpareAge = 120'000'000'000;
// How often the maker looks again while steps are being made.
constexpr std::chrono::milliseconds kBusyWait{20};

// The holder's supplementary groups are looked up when it is made (tasks take Slurm's).
StepContainerInput spare_input(const SpareKey& key, const std::string& user) {
  StepContainerInput in;
  in.job = {0, key.uid, user};
  in.gid = key.gid;
  in.image = key.image;
  in.spare = std::to_string(now_ns());
  return in;
}

}  // namespace

SpareContainers::SpareContainers(SpareParts parts, NodeSettings node, MountAttacher attach, Metrics& metrics)
    : cri_(parts.cri),
      pool_(parts.pool),
      claims_(parts.claims),
      containers_(parts.containers),
      sandboxes_(parts.sandboxes),
      starter_(parts.starter),
      holders_(parts.holders),
      work_(parts.work),
      node_(std::move(node)),
      attach_(std::move(attach)),
      metrics_(metrics),
      started_ns_(now_ns()) {
  if (size_t n = claims_.load()) log_info(std::to_string(n) + " claimed spare container(s) known from before");
  if (pool_.limits().per_node) thread_ = std::thread([this] { loop(); });
}

SpareContainers::~SpareContainers() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (uint64_t n = remove(std::nullopt)) log_info("removed " + std::to_string(n) + " spare container(s)");
}

std::optional<SpareKey> SpareContainers::key_of(const v1::CreateStepRequest& req, const StepPlan& plan) const {
  // Named containers outlive steps; an entrypoint or a squashfs root is made for the step's own,
  // and CDI hooks must see the root containerd made, before it is the user's (give_rootfs).
  if (pool_.limits().per_node == 0 || plan.named || !req.image_file().empty() || !plan.in.entrypoint.empty() ||
      req.readonly_rootfs() || plan.image_id.empty() || !plan.hooks.empty())
    return std::nullopt;
  return SpareKey{req.uid(), req.gid(), plan.in.image};
}

Result<std::string> SpareContainers::claim(const v1::CreateStepRequest& req, StepPlan& plan, PhaseClock& clock) {
  auto key = key_of(req, plan);
  if (!key) return std::string();
  plan.spare_arrival = std::make_unique<SparePool::Arrival>(pool_, *key);
  auto spare = pool_.take(*key);
  if (!spare) return std::string();
  clock.begin("claim");
  if (auto s = fit(req, plan, *key, *spare); !s) {
    // The step gets a container made for it, as without spares; this one is used by no one.
    metrics_.spare(SpareEvent::kPassedOver);
    log_info("spare container " + spare->id.substr(0, 12) + " not used for " + slurm::step_text(req.job_id(), req.step_id()) +
             ": " + s.error());
    remove_one(spare->id);
    return std::string();
  }
  metrics_.spare(SpareEvent::kClaimed);
  plan.claimed = true;
  plan.container_id = spare->id;
  plan.pid = spare->holder_pid;
  plan.rootfs_given = spare->rootfs_given;
  return spare->id;
}

Status SpareContainers::fit(const v1::CreateStepRequest& req, const StepPlan& plan, const SpareKey& key,
                                 const Spare& spare) {
  if (spare.image_id != plan.image_id) return fail(ErrorKind::kUnsupported, "its image's tag names another image now");
  auto diff = plan_claim(plan.config, build_step_container(spare_input(key, plan.scope.user), node_));
  if (!diff) return diff.take_error();
  Claim claim{req.job_id(), req.step_id(), req.stepd_pid(), 0, plan.in.tmpfs_root, plan.in.hca_view};
  if (req.stepd_pid() > 0) {
    auto start = process_start_time(req.stepd_pid());
    if (!start) return fail("slurmstepd " + std::to_string(req.stepd_pid()) + " is gone");
    claim.stepd_start = *start;
  }
  // Recorded first: from now on the container is the step's, and goes with it whatever happens.
  if (auto s = claims_.record(spare.id, claim); !s) return s;
  AttachRequest a{spare.holder_pid, spare.holder_start, {}, {}, std::nullopt};
  for (const cri::Mount& m : diff->mounts) a.mounts.push_back({m.host_path(), m.container_path(), m.readonly()});
  for (const cri::Device& d : diff->devices) a.devices.push_back({d.host_path(), d.container_path()});
  if (spare.rootfs_given) a.root_owner = std::make_pair(req.uid(), req.gid());
  // Attached as root into runc's namespace only, never one the user's holder made.
  if (auto ns = runc_mount_ns(spare.holder_pid); !ns) return ns.take_error();
  return attach_(a);
}

void SpareContainers::want(const v1::CreateStepRequest& req, const StepPlan& plan) {
  auto key = key_of(req, plan);
  if (!key) return;
  auto use = pool_.note_use(*key, now_ns());
  for (const Spare& evicted : use.evicted) {
    log_info("removing spare container " + evicted.id.substr(0, 12) + " for one of " + key->image + ", used later");
    remove_one(evicted.id);
  }
  if (use.make == 0) return;
  {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < use.make; ++i) queue_.emplace_back(*key, plan.scope.user);
  }
  cv_.notify_one();
}

// One at a time, only while no step's container is being made (nor, for a burst's refill,
// removed) nor was a moment ago: a spare never delays a step.
void SpareContainers::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    if (work_.recent(StepWork::Work::kCreate) || (queue_.size() > 1 && work_.recent(StepWork::Work::kRemove))) {
      cv_.wait_for(lock, kBusyWait, [this] { return stop_; });
      continue;
    }
    auto [key, user] = queue_.front();
    queue_.pop_front();
    lock.unlock();
    auto t0 = std::chrono::steady_clock::now();
    auto made = make(key, user);
    if (made && !pool_.made(key, *made)) {
      remove_one(made->id);  // its user's spares were removed meanwhile
    } else if (made) {
      metrics_.spare(SpareEvent::kMade);
      log_info("made spare container " + made->id.substr(0, 12) + " (uid " + std::to_string(key.uid) + ", " + key.image +
               ") in " +
               std::to_string(ms_since(t0)) +
               " ms");
    } else {
      pool_.unmade(key);
      log_warn("cannot make a spare container of " + key.image + " for uid " + std::to_string(key.uid) + ": " + made.error());
    }
    lock.lock();
  }
}

Result<Spare> SpareContainers::make(const SpareKey& key, const std::string& user) {
  auto image = cri_.image_status(key.image, false);
  if (!image) return image.take_error();
  if (!image->has_image()) return fail("its image is no longer on the node");
  v1::CreateStepRequest req;  // what the spare's root needs of a step: its user
  req.set_uid(key.uid);
  req.set_gid(key.gid);
  req.set_user(user);
  StepPlan plan = StepPlan::of(req);
  plan.in = spare_input(key, user);
  plan.in.groups = lookup_groups(user, key.gid);
  plan.config = build_step_container(plan.in, node_);
  auto id = sandboxes_.create_container(key.uid, user, plan.config, key.image, nullptr);
  if (!id) return id.take_error();
  plan.container_id = *id;
  ContainerGuard guard(containers_, *id);
  if (auto s = starter_.start_bare(req, plan); !s) return s.take_error();
  auto started = process_start_time(plan.pid);
  if (!started) return fail("its holder exited: " + started.error());
  holders_.keep(*id, plan.pid, *started);
  guard.keep();
  return Spare{*id, image->image().id(), plan.pid, *started, plan.rootfs_given};
}

void SpareContainers::remove_one(const std::string& container_id) {
  cri::Container c;
  c.set_id(container_id);
  if (containers_.remove({c}).count) metrics_.spare(SpareEvent::kRemoved);
}

uint64_t SpareContainers::expire() {
  uint64_t n = 0;
  for (const Spare& s : pool_.expired(now_ns())) {
    log_info("removing spare container " + s.id.substr(0, 12) + ", unused for its grace period");
    remove_one(s.id);
    n++;
  }
  return n;
}

uint64_t SpareContainers::remove(std::optional<uint32_t> uid) {
  uint64_t n = 0;
  for (const Spare& s : pool_.take_all(uid)) {
    remove_one(s.id);
    n++;
  }
  return n;
}

RemovalCause SpareContainers::to_remove(const cri::Container& c) const {
  if (labels::value_of(c.labels(), labels::kSpare) != "true") return {};
  if (auto claim = claims_.find(c.id())) {
    auto start = claim->stepd_pid > 0 ? process_start_time(claim->stepd_pid) : Result<uint64_t>(claim->stepd_start);
    bool stepd_alive = start && *start == claim->stepd_start;
    if (stepd_alive) return {};
    return {"spare_orphaned", "claimed spare, whose slurmstepd exited,"};
  }
  if (pool_.holds(c.id())) return {};
  if (c.created_at() < started_ns_ || now_ns() - c.created_at() > kUnknownSpareAge) return {"spare_stray", "spare unknown to crispd"};
  return {};
}

}  // namespace crisp
