// Spare containers: after a step of a user and image starts, crispd makes, in
// the background, one more container of that image for that user with nothing
// of any job in it (started, its holder up, its root the user's). The user's
// next new job or unnamed step of that image claims it: the step's mounts and
// devices are attached inside (claim_mounts.h), which takes milliseconds where
// runc's create and start take tens. A spare is claimed once, never recycled.
#include <signal.h>

#include <chrono>

#include "agent/cri/labels.h"
#include "agent/spares/claim_plan.h"
#include "agent/step_manager.h"
#include "agent/step_plan.h"
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
// How long after a step's container is answered the maker waits: the step's own
// tasks start then (Slurm's launch, the tasks joining), and runc's work for a spare,
// 100 ms of CPU and more, would slow them on a small node.
constexpr int64_t kQuietNs = 200'000'000;

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

StepManager::StepManager(CriClient& cri, ImageStore& images, StepSettings settings)
    : cri_(cri),
      images_(images),
      settings_(std::move(settings)),
      imports_(std::max<size_t>(1, settings_.imports_per_user), settings_.imports_per_node),
      pool_(settings_.spares),
      claims_(settings_.claims_dir),
      started_ns_(now_ns()) {
  if (size_t n = claims_.load()) log_info(std::to_string(n) + " claimed spare container(s) known from before");
  if (settings_.spares.per_node) spare_thread_ = std::thread([this] { spare_loop(); });
}

StepManager::~StepManager() {
  {
    std::lock_guard lock(spare_mu_);
    spare_stop_ = true;
  }
  spare_cv_.notify_all();
  if (spare_thread_.joinable()) spare_thread_.join();
  if (uint64_t n = remove_spares(std::nullopt)) log_info("removed " + std::to_string(n) + " spare container(s)");
}

std::optional<SpareKey> StepManager::spare_key(const v1::CreateStepRequest& req, const Plan& plan) const {
  // Named containers outlive steps; an entrypoint or a squashfs root is made for the step's own,
  // and CDI hooks must see the root containerd made, before it is the user's (give_rootfs).
  if (settings_.spares.per_node == 0 || plan.named || !req.image_file().empty() || !plan.in.entrypoint.empty() ||
      req.readonly_rootfs() || plan.image_id.empty() || !plan.hooks.empty())
    return std::nullopt;
  return SpareKey{req.uid(), req.gid(), plan.in.image};
}

Result<std::string> StepManager::claim_spare(const v1::CreateStepRequest& req, Plan& plan, PhaseClock& clock) {
  auto key = spare_key(req, plan);
  auto spare = key ? pool_.take(*key) : std::nullopt;
  if (!spare) return std::string();
  clock.begin("claim");
  if (auto s = attach_spare(req, plan, *key, *spare); !s) {
    // The step gets a container made for it, as without spares; this one is used by no one.
    spares_passed_over++;
    log_info("spare container " + spare->id.substr(0, 12) + " not used for " + slurm::step_text(req.job_id(), req.step_id()) +
             ": " + s.error());
    remove_spare(spare->id);
    return std::string();
  }
  spares_claimed++;
  plan.claimed = true;
  plan.container_id = spare->id;
  plan.pid = spare->holder_pid;
  plan.rootfs_given = spare->rootfs_given;
  return spare->id;
}

Status StepManager::attach_spare(const v1::CreateStepRequest& req, const Plan& plan, const SpareKey& key,
                                 const Spare& spare) {
  if (spare.image_id != plan.image_id) return fail(ErrorKind::kUnsupported, "its image's tag names another image now");
  auto diff = plan_claim(build_step_container(plan.in, settings_.node),
                         build_step_container(spare_input(key, plan.scope.user), settings_.node));
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
  return settings_.attach(a);
}

void StepManager::want_spare(const v1::CreateStepRequest& req, const Plan& plan) {
  auto key = spare_key(req, plan);
  if (!key) return;
  auto use = pool_.note_use(*key, now_ns());
  if (use.evicted) {
    log_info("removing spare container " + use.evicted->id.substr(0, 12) + " for one of " + key->image + ", used later");
    remove_spare(use.evicted->id);
  }
  if (!use.make) return;
  {
    std::lock_guard lock(spare_mu_);
    spare_queue_.emplace_back(*key, plan.scope.user);
  }
  spare_cv_.notify_one();
}

// One at a time, only while no step's container is being made nor was a moment ago: a spare
// never delays a step.
void StepManager::spare_loop() {
  std::unique_lock lock(spare_mu_);
  for (;;) {
    spare_cv_.wait(lock, [this] { return spare_stop_ || !spare_queue_.empty(); });
    if (spare_stop_) return;
    if (creating_ > 0 || now_ns() - created_ns_ < kQuietNs) {
      spare_cv_.wait_for(lock, kBusyWait, [this] { return spare_stop_; });
      continue;
    }
    auto [key, user] = spare_queue_.front();
    spare_queue_.pop_front();
    lock.unlock();
    auto t0 = std::chrono::steady_clock::now();
    auto made = make_spare(key, user);
    if (made && !pool_.made(key, *made)) {
      remove_spare(made->id);  // its user's spares were removed meanwhile
    } else if (made) {
      spares_made++;
      log_info("made spare container " + made->id.substr(0, 12) + " (uid " + std::to_string(key.uid) + ", " + key.image +
               ") in " +
               std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count()) +
               " ms");
    } else {
      pool_.unmade(key);
      log_warn("cannot make a spare container of " + key.image + " for uid " + std::to_string(key.uid) + ": " + made.error());
    }
    lock.lock();
  }
}

Result<Spare> StepManager::make_spare(const SpareKey& key, const std::string& user) {
  auto image = cri_.image_status(key.image, false);
  if (!image) return image.take_error();
  if (!image->has_image()) return fail("its image is no longer on the node");
  v1::CreateStepRequest req;  // what the spare's root needs of a step: its user
  req.set_uid(key.uid);
  req.set_gid(key.gid);
  req.set_user(user);
  Plan plan = new_plan(req);
  plan.in = spare_input(key, user);
  plan.in.groups = lookup_groups(user, key.gid);
  auto id = create_in_user_sandbox(key.uid, user, plan.in, nullptr);
  if (!id) return id.take_error();
  plan.container_id = *id;
  ContainerGuard guard(*this, *id);
  if (auto s = start_container(plan); !s) return s.take_error();
  if (auto s = wait_for_holder(req, plan, plan.pid, {}); !s) return s.take_error();
  if (auto s = give_rootfs(req, plan); !s) return s.take_error();
  auto started = process_start_time(plan.pid);
  if (!started) return fail("its holder exited: " + started.error());
  keep_holder(*id, plan.pid, *started);
  guard.keep();
  return Spare{*id, image->image().id(), plan.pid, *started, plan.rootfs_given};
}

void StepManager::remove_spare(const std::string& container_id) {
  cri::Container c;
  c.set_id(container_id);
  v1::ReleaseResponse out;
  if (remove_containers({c}, out); out.removed_containers()) spares_removed++;
}

uint64_t StepManager::expire_spares() {
  uint64_t n = 0;
  for (const Spare& s : pool_.expired(now_ns())) {
    log_info("removing spare container " + s.id.substr(0, 12) + ", unused for its grace period");
    remove_spare(s.id);
    n++;
  }
  return n;
}

uint64_t StepManager::remove_spares(std::optional<uint32_t> uid) {
  uint64_t n = 0;
  for (const Spare& s : pool_.take_all(uid)) {
    remove_spare(s.id);
    n++;
  }
  return n;
}

StepManager::Removal StepManager::spare_to_remove(const cri::Container& c) const {
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

Result<std::vector<cri::Container>> StepManager::find_containers(const Labels& selector) {
  auto found = cri_.list_containers(selector);
  if (!found) return found;
  std::erase_if(*found, [](const cri::Container& c) { return labels::value_of(c.labels(), labels::kSpare) == "true"; });
  if (!claims_.any()) return found;
  auto spares = cri_.list_containers({{labels::kManaged, "true"}, {labels::kSpare, "true"}});
  if (!spares) return spares;
  for (cri::Container& c : *spares) {
    if (!claims_.overlay(c)) continue;
    bool match = true;
    for (const auto& [k, v] : selector) match = match && labels::value_of(c.labels(), k) == v;
    if (match) found->push_back(std::move(c));
  }
  return found;
}

}  // namespace crisp
