#include "agent/steps/step_ends.h"

#include <chrono>

#include "agent/cri/labels.h"
#include "agent/metrics/metrics.h"
#include "agent/steps/phase_clock.h"
#include "common/log.h"
#include "common/slurm_ids.h"

namespace crisp {
namespace {

// A removal waits this long at most: launches that never pause must not pile up
// containers; each waiting removal holds its connection's thread, so at most this many wait.
constexpr std::chrono::milliseconds kMostWait{10000};
constexpr int kMostWaiting = 64;

Result<v1::ReleaseResponse> released(const Containers::Removed& removed) {
  if (!removed.status) return removed.status.take_error();
  v1::ReleaseResponse out;
  out.set_removed_containers(removed.count);
  return out;
}

}  // namespace

Result<StepEnds::OnlyIds> StepEnds::after_launches(const Labels& selector) {
  if (!work_.recent(StepWork::Work::kCreate)) return OnlyIds();
  auto found = containers_.find(selector);
  if (!found) return found.take_error();
  // What the containers held on the host is given back now: the paths are named by job and
  // step, and a job requeued onto the node during the wait would have them again.
  std::set<std::string> ids;
  for (const cri::Container& c : *found) {
    ids.insert(c.id());
    containers_.give_back_host(c);
  }
  if (!ids.empty()) work_.wait_for_quiet_creates(kMostWait, kMostWaiting);
  return OnlyIds(std::move(ids));
}

Containers::Host StepEnds::host_after(const OnlyIds& only) {
  return only ? Containers::Host::kGivenBack : Containers::Host::kGiveBack;
}

Result<std::vector<cri::Container>> StepEnds::to_remove(const Labels& selector, const OnlyIds& only) {
  auto found = containers_.find(selector);
  // A job requeued onto this node while the removal waited has its id, and its steps the same numbers.
  if (found && only) std::erase_if(*found, [&](const cri::Container& c) { return !only->count(c.id()); });
  return found;
}

Result<v1::ReleaseResponse> StepEnds::release_step(uint32_t job_id, uint32_t step_id,
                                                   const std::function<void()>& answered_first) {
  auto t0 = std::chrono::steady_clock::now();
  StepWork::Busy busy(work_, StepWork::Work::kRemove);
  Labels sel = job_selector(job_id);
  sel[labels::kStep] = std::to_string(step_id);
  Result<OnlyIds> only = OnlyIds();
  if (answered_first) answered_first();
  // A named container stays; this step's own namespaces go with it (before a wait: a requeued
  // run's step of the same number would have its own).
  sessions_.forget_step(job_id, step_id);
  if (answered_first) {
    only = after_launches(sel);
    if (!only) return only.take_error();
  }
  int64_t waited = ms_since(t0);
  auto lock = locks_.share_job(job_id);
  auto containers = to_remove(sel, *only);
  if (!containers) return containers.take_error();
  auto out = released(containers_.remove(*containers, host_after(*only)));
  if (!out) return out;
  metrics_.released();
  log_info("released " + slurm::step_text(job_id, step_id) + ": " + std::to_string(out->removed_containers()) +
           " container(s) in " + std::to_string(ms_since(t0)) + " ms (" + std::to_string(waited) +
           " ms of it waiting for launches)");
  return out;
}

Result<v1::ReleaseResponse> StepEnds::release_job(uint32_t job_id, const std::function<void()>& answered_first) {
  StepWork::Busy busy(work_, StepWork::Work::kRemove);  // the holders' exits too: the spare maker waits for them
  Result<OnlyIds> only = OnlyIds();
  if (answered_first) {
    // Not under the job's lock: a step's removal, which holds it, is what this need not wait for.
    if (auto ended = end_job_processes(job_id); ended) {
      answered_first();
      only = after_launches(job_selector(job_id));
      if (!only) return only.take_error();
    } else {
      log_warn("ending the processes of job " + std::to_string(job_id) + ": " + ended.error() +
               " (answered after the removal)");
    }
  }
  auto lock = locks_.lock_job(job_id);
  auto containers = to_remove(job_selector(job_id), *only);
  if (!containers) return containers.take_error();
  auto out = released(containers_.remove(*containers, host_after(*only)));
  if (!out) return out;
  // The user's sandbox stays for their next job; the sweep removes it once idle.
  if (out->removed_containers())
    log_info("released job " + std::to_string(job_id) + ": " + std::to_string(out->removed_containers()) + " container(s)");
  return out;
}

Result<v1::ReleaseResponse> StepEnds::remove_named(uint32_t uid, const std::string& name) {
  Labels sel = {{labels::kManaged, "true"}, {labels::kUid, std::to_string(uid)}, {labels::kName, name}};
  auto found = containers_.find(sel);
  if (!found) return found.take_error();
  if (found->empty()) return fail("there is no container named " + name + " of uid " + std::to_string(uid) + " on this node");
  uint32_t removed = 0;
  for (const cri::Container& c : *found) {
    auto lock = locks_.lock_job(labels::number_of(c.labels(), labels::kJob));
    auto gone = containers_.remove({c});
    if (!gone.status) return gone.status.take_error();
    removed += gone.count;
  }
  log_info("removed named container " + name + " of uid " + std::to_string(uid));
  v1::ReleaseResponse out;
  out.set_removed_containers(removed);
  return out;
}

}  // namespace crisp
