#include "agent/steps/containers.h"

#include <unistd.h>

#include <chrono>
#include <thread>

#include "agent/cri/cri_client.h"
#include "agent/cri/labels.h"
#include "agent/host/hca_view.h"
#include "agent/host/host_mounts.h"
#include "common/cgroups.h"
#include "common/log.h"

namespace crisp {

Labels job_selector(uint32_t job_id) { return {{labels::kManaged, "true"}, {labels::kJob, std::to_string(job_id)}}; }

Result<std::vector<cri::Container>> Containers::find(const Labels& selector) {
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

Containers::Removed Containers::remove(const std::vector<cri::Container>& containers, Host host) {
  Removed out;
  for (const cri::Container& c : containers) {
    std::vector<std::string> adopted = adopted_cgroups(c);
    // Ended first, in the stop's slot (cri_client.h: exits are paced); containerd's stop then
    // only notes the exit. Unknown to this crispd, it exits on the stop's SIGTERM; remove
    // alone would SIGKILL it.
    auto end = [&] { (void)holders_.end(c.id()); };
    Status stopped = cri_.stop_container(c.id(), stop_timeout_s_, end);
    // Removed by another meanwhile (the sweep and a release both at it): not counted again.
    bool gone = !stopped && stopped.error_kind() == ErrorKind::kNotFound;
    if (!stopped && !gone) log_warn("stopping container " + c.id() + ": " + stopped.error());
    if (!gone) {
      Status removed = cri_.remove_container(c.id());
      if (!removed && stopped && exit_noted(c.id())) removed = cri_.remove_container(c.id());
      if (!removed) {
        log_error("removing container " + c.id() + ": " + removed.error());
        out.status = removed;
        continue;
      }
      out.count++;
    }
    holders_.forget(c.id());
    sessions_.forget_container(c.id());
    claims_.forget(c.id());
    pool_.drop(c.id());
    sandboxes_.touch(c.pod_sandbox_id());
    if (host == Host::kGiveBack) give_back_host(c);
    // Stopping the holder leaves what it started: they are in the job's (or user's) cgroup now.
    // Slurm could not remove that cgroup while they ran; once they are gone it can go (rmdir
    // refuses while other steps or processes are still in it).
    for (const std::string& dir : adopted) {
      kill_cgroup_processes(dir);
      (void)rmdir(dir.c_str());
    }
  }
  return out;
}

// containerd notes a task's exit once its shim has handled it (for a container in the node's
// pid namespace, a runc kill --all under the shim's one lock). A stop of a container whose
// holder had ended already (the job's end did it) may return before that, and the removal is
// then refused as running: the exit is waited for, a few seconds at most (a shim behind a
// burst's exits took seconds).
bool Containers::exit_noted(const std::string& id) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    auto status = cri_.container_status(id, false);
    if (!status) return false;
    if (status->status().state() != cri::CONTAINER_RUNNING) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void Containers::give_back_host(const cri::Container& c) {
  if (auto dir = labels::value_of(c.labels(), labels::kTmpfs); !dir.empty()) remove_mount_root(dir);
  if (auto dir = labels::value_of(c.labels(), labels::kHcaView); !dir.empty()) remove_hca_view(dir);
}

// A named container's processes were moved into its job's (or user's) Slurm
// cgroups, which hold nothing else; an unnamed one's are in its step's, which
// Slurm empties itself at the step's end.
std::vector<std::string> Containers::adopted_cgroups(const cri::Container& c) {
  if (labels::value_of(c.labels(), labels::kName).empty()) return {};
  return slurm_cgroup_dirs(labels::number_of(c.labels(), labels::kUid), labels::number_of(c.labels(), labels::kJob));
}

// Not under the job's lock: a step's removal, which holds it, is what this need not wait for.
Status Containers::end_job_processes(uint32_t job_id) {
  sessions_.forget_job(job_id);
  auto containers = find(job_selector(job_id));
  if (!containers) return containers.take_error();
  for (const cri::Container& c : *containers) {
    if (!holders_.end(c.id()) && c.state() == cri::CONTAINER_RUNNING)
      if (auto s = cri_.stop_container(c.id(), stop_timeout_s_); !s) return s;
    for (const std::string& dir : adopted_cgroups(c)) kill_cgroup_processes(dir);
    give_back_host(c);
  }
  return Ok{};
}

Result<v1::ListResponse> Containers::list(uint32_t job_id, int64_t only_uid) {
  Labels sel = {{labels::kManaged, "true"}};
  if (job_id) sel[labels::kJob] = std::to_string(job_id);
  if (only_uid >= 0) sel[labels::kUid] = std::to_string(only_uid);
  auto containers = job_id ? find(sel) : cri_.list_containers(sel);
  if (!containers) return containers.take_error();
  v1::ListResponse out;
  for (cri::Container& c : *containers) {
    bool claimed = claims_.overlay(c);
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

ContainerGuard::~ContainerGuard() {
  if (id_.empty()) return;
  cri::Container c;
  c.set_id(id_);
  (void)containers_.remove({c});
}

}  // namespace crisp
