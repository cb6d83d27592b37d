#include "agent/step_manager.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>

#include "agent/cri/labels.h"
#include "agent/host/hca_view.h"
#include "agent/host/host_mounts.h"
#include "common/cgroups.h"
#include "common/log.h"
#include "common/slurm_ids.h"
#include "common/time.h"

namespace crisp {
std::shared_ptr<std::shared_mutex> StepManager::slot(uint64_t key) {
  std::lock_guard lock(locks_mu_);
  auto& m = locks_[key];
  if (!m) m = std::make_shared<std::shared_mutex>();
  return m;
}

// Only when no other thread holds or waits on it (the map's reference and the
// caller's are all): a mutex erased under a waiter would let a newcomer take a
// second one for the same job. slot() copies under locks_mu_, so the count
// cannot grow while it is read here.
void StepManager::forget_job_lock(uint32_t job_id) {
  std::lock_guard lock(locks_mu_);
  auto it = locks_.find(job_id);
  if (it != locks_.end() && it->second.use_count() <= 2) locks_.erase(it);
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
  if (!found) return found.take_error();
  for (const cri::PodSandbox& sb : *found) {
    if (sb.state() == cri::SANDBOX_READY) return sb;
    // A sandbox that is not ready is a leftover: it must go before its name can be reused.
    log_warn("removing sandbox " + sb.id() + " of uid " + std::to_string(uid) + ", which is not ready");
    if (auto s = cri_.remove_pod_sandbox(sb.id()); !s) return s.take_error();
  }
  auto id = cri_.run_pod_sandbox(build_user_sandbox_config(uid, user, settings_.node), settings_.runtime_handler);
  if (!id) return fail("cannot create the sandbox of uid " + std::to_string(uid) + ": " + id.error());
  cri::PodSandbox sb;
  sb.set_id(*id);
  sb.set_state(cri::SANDBOX_READY);
  return sb;
}

Status StepManager::remove_containers(const std::vector<cri::Container>& containers, v1::ReleaseResponse& out) {
  Status result = Ok{};
  for (const cri::Container& c : containers) {
    std::vector<std::string> adopted = adopted_cgroups(c);
    // Ended first, at once; containerd's stop then only notes the exit. Unknown to this
    // crispd, it exits on the stop's SIGTERM; remove alone would SIGKILL it.
    (void)end_holder(c.id());
    if (auto s = cri_.stop_container(c.id(), settings_.stop_timeout_s); !s)
      log_warn("stopping container " + c.id() + ": " + s.error());
    if (auto s = cri_.remove_container(c.id()); !s) {
      log_error("removing container " + c.id() + ": " + s.error());
      result = s;
      continue;
    }
    forget_holder(c.id());
    forget_container(c.id());
    claims_.forget(c.id());
    pool_.drop(c.id());
    out.set_removed_containers(out.removed_containers() + 1);
    touch_sandbox(c.pod_sandbox_id());
    if (auto dir = labels::value_of(c.labels(), labels::kTmpfs); !dir.empty()) remove_mount_root(dir);
    if (auto dir = labels::value_of(c.labels(), labels::kHcaView); !dir.empty()) remove_hca_view(dir);
    // Stopping the holder leaves what it started: they are in the job's (or user's) cgroup now.
    // Slurm could not remove that cgroup while they ran; once they are gone it can go (rmdir
    // refuses while other steps or processes are still in it).
    for (const std::string& dir : adopted) {
      kill_cgroup_processes(dir);
      (void)rmdir(dir.c_str());
    }
  }
  return result;
}

// A named container's processes were moved into its job's (or user's) Slurm
// cgroups, which hold nothing else; an unnamed one's are in its step's, which
// Slurm empties itself at the step's end.
std::vector<std::string> StepManager::adopted_cgroups(const cri::Container& c) {
  if (labels::value_of(c.labels(), labels::kName).empty()) return {};
  return slurm_cgroup_dirs(labels::number_of(c.labels(), labels::kUid), labels::number_of(c.labels(), labels::kJob));
}

Status StepManager::remove_sandbox_if_empty(const cri::PodSandbox& sandbox, bool& removed) {
  removed = false;
  auto rest = cri_.list_containers({}, sandbox.id());
  if (!rest) return rest.take_error();
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
  // A named container stays; this step's own namespaces go with it.
  forget_step(job_id, step_id);
  auto containers = find_containers(sel);
  if (!containers) return containers.take_error();
  if (auto s = remove_containers(*containers, out); !s) return s.take_error();
  released++;
  log_info("released " + slurm::step_text(job_id, step_id) + ": " + std::to_string(out.removed_containers()) +
           " container(s) in " +
           std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count()) +
           " ms");
  return out;
}

void StepManager::keep_holder(const std::string& container_id, int pid, uint64_t start_time) {
  auto fd = open_process(pid, start_time);
  if (!fd) return;  // containerd's stop ends it
  std::lock_guard lock(holders_mu_);
  holders_[container_id] = std::move(*fd);
}

bool StepManager::end_holder(const std::string& container_id) {
  Fd mine;
  {
    std::lock_guard lock(holders_mu_);
    auto it = holders_.find(container_id);
    if (it == holders_.end()) return false;
    mine = Fd(fcntl(it->second.get(), F_DUPFD_CLOEXEC, 0));
  }
  if (!mine) return false;
  settings_.end_holder(mine.get());
  return true;
}

void StepManager::forget_holder(const std::string& container_id) {
  std::lock_guard lock(holders_mu_);
  holders_.erase(container_id);
}

// Not under the job's lock: a step's removal, which holds it, is what this need not wait for.
Status StepManager::end_job_processes(uint32_t job_id) {
  forget_job_steps(job_id);
  auto containers = find_containers(job_selector(job_id));
  if (!containers) return containers.take_error();
  for (const cri::Container& c : *containers) {
    if (!end_holder(c.id()) && c.state() == cri::CONTAINER_RUNNING)
      if (auto s = cri_.stop_container(c.id(), settings_.stop_timeout_s); !s) return s;
    for (const std::string& dir : adopted_cgroups(c)) kill_cgroup_processes(dir);
  }
  return Ok{};
}

Result<v1::ReleaseResponse> StepManager::release_job(uint32_t job_id) {
  auto lock = lock_job(job_id);
  v1::ReleaseResponse out;
  auto containers = find_containers(job_selector(job_id));
  if (!containers) return containers.take_error();
  if (auto s = remove_containers(*containers, out); !s) return s.take_error();
  // The user's sandbox stays for their next job; the sweep removes it once idle.
  if (out.removed_containers())
    log_info("released job " + std::to_string(job_id) + ": " + std::to_string(out.removed_containers()) + " container(s)");
  // A node runs many jobs: their mutexes must not pile up.
  if (job_id != 0) forget_job_lock(job_id);
  return out;
}

Result<v1::ReleaseResponse> StepManager::remove_named(uint32_t uid, const std::string& name) {
  Labels sel = {{labels::kManaged, "true"}, {labels::kUid, std::to_string(uid)}, {labels::kName, name}};
  auto found = cri_.list_containers(sel);
  if (!found) return found.take_error();
  if (found->empty()) return fail("there is no container named " + name + " of uid " + std::to_string(uid) + " on this node");
  v1::ReleaseResponse out;
  for (const cri::Container& c : *found) {
    auto lock = lock_job(labels::number_of(c.labels(), labels::kJob));
    if (auto s = remove_containers({c}, out); !s) return s.take_error();
  }
  log_info("removed named container " + name + " of uid " + std::to_string(uid));
  return out;
}

Result<v1::ListResponse> StepManager::list(uint32_t job_id, int64_t only_uid) {
  Labels sel = {{labels::kManaged, "true"}};
  if (job_id) sel[labels::kJob] = std::to_string(job_id);
  if (only_uid >= 0) sel[labels::kUid] = std::to_string(only_uid);
  auto containers = job_id ? find_containers(sel) : cri_.list_containers(sel);
  if (!containers) return containers.take_error();
  v1::ListResponse out;
  for (cri::Container& c : *containers) {
    bool claimed = overlay_claim(c);
    bool spare = !claimed && labels::value_of(c.labels(), labels::kSpare) == "true";
    if (spare && !pool_.holds(c.id())) continue;  // being made, or a stray the sweep removes
    v1::StepInfo* s = out.add_steps();
    s->set_job_id(labels::number_of(c.labels(), labels::kJob));
    s->set_step_id(labels::number_of(c.labels(), labels::kStep));
    s->set_uid(labels::number_of(c.labels(), labels::kUid));
    s->set_image(labels::value_of(c.labels(), labels::kImage));
    s->set_container_id(c.id());
    s->set_sandbox_id(c.pod_sandbox_id());
    s->set_state(cri::ContainerState_Name(c.state()));
    s->set_created_at_ns(c.created_at());
    s->set_name(labels::value_of(c.labels(), labels::kName));
    s->set_spare(spare);
  }
  return out;
}

}  // namespace crisp
