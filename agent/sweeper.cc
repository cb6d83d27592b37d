#include "agent/sweeper.h"

#include <map>
#include <string>

#include "agent/cri/cri_client.h"
#include "agent/cri/labels.h"
#include "agent/metrics/metrics.h"
#include "common/log.h"
#include "common/time.h"

namespace crisp {

namespace {

// Why a container goes, if it does: it exited, or its job is over (asked once per job and pass).
RemovalCause reason_to_remove(const cri::Container& c, uint32_t job, const JobCheck& jobs,
                                      std::map<uint32_t, JobLiveness>& known) {
  if (c.state() == cri::CONTAINER_EXITED || c.state() == cri::CONTAINER_UNKNOWN) return {"exited", "exited"};
  // Job 0: a named container of global scope, which outlives its jobs by design.
  if (job == 0 || !jobs) return {};
  auto it = known.find(job);
  if (it == known.end()) it = known.emplace(job, jobs(job)).first;
  if (it->second != JobLiveness::kOver) return {};
  return {"job_over", "running, of a job that is over,"};
}

// A container's kind in crisp_containers: a claimed spare is a step's (its claim is laid over).
const char* kind_of(const cri::Container& c) {
  if (!labels::value_of(c.labels(), labels::kName).empty()) return "named";
  if (labels::value_of(c.labels(), labels::kSpare) == "true" && labels::value_of(c.labels(), labels::kJob).empty())
    return "spare";
  return "step";
}

}  // namespace

uint64_t sweep_once(const SweepParts& p, std::chrono::seconds sandbox_grace, const JobCheck& jobs) {
  CriClient& cri = p.cri;
  const Labels managed = {{labels::kManaged, "true"}};
  Metrics& metrics = p.metrics;
  uint64_t removed = p.spares.expire();
  metrics.swept("spare_expired", removed);

  auto containers = cri.list_containers(managed);
  if (!containers) {
    log_warn("sweep: " + containers.error());
    return 0;
  }
  std::map<uint32_t, JobLiveness> known;
  std::map<std::string, double> present;
  for (cri::Container& c : *containers) {
    p.claims.overlay(c);  // a claimed spare is its step's
    uint32_t job = labels::number_of(c.labels(), labels::kJob);
    auto why = p.spares.to_remove(c);
    if (!why) why = reason_to_remove(c, job, jobs, known);
    if (!why) {
      present[kind_of(c)]++;
      continue;
    }
    auto lock = p.locks.lock_job(job);
    if (p.containers.remove({c}).count) {
      metrics.swept(why.cause);
      log_info("sweep: removed " + std::string(why.why) + " container " + c.id().substr(0, 12) + " of job " +
               std::to_string(job));
      removed++;
    }
  }

  auto sandboxes = cri.list_pod_sandboxes(managed);
  if (!sandboxes) {
    log_warn("sweep: " + sandboxes.error());
    return removed;
  }
  int64_t now = now_ns();
  double kept = 0;
  for (const cri::PodSandbox& sb : *sandboxes) {
    kept++;
    // Kept for the user's next job, or still waiting for its first container.
    if (sb.state() == cri::SANDBOX_READY &&
        now - p.sandboxes.last_used_ns(sb) < std::chrono::nanoseconds(sandbox_grace).count())
      continue;
    auto gone = p.sandboxes.remove_if_empty(sb);
    if (!gone) log_warn("sweep: " + gone.error());
    if (gone && *gone) {
      kept--;
      metrics.swept("idle_sandbox");
      log_info("sweep: removed the idle sandbox " + sb.id().substr(0, 12) + " of " + labels::value_of(sb.labels(), labels::kPodName));
      removed++;
    }
  }
  metrics.present(present, kept);
  return removed;
}

Sweeper::Sweeper(SweepParts parts, std::chrono::seconds interval, std::chrono::seconds sandbox_grace, JobCheck jobs)
    : parts_(parts), interval_(interval), grace_(sandbox_grace), jobs_(std::move(jobs)) {
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stop_) {
      lock.unlock();
      // Labels read back are what anyone with containerd's socket wrote: nothing may end this thread.
      try {
        (void)sweep_once(parts_, grace_, jobs_);
      } catch (const std::exception& e) {
        log_error(std::string("sweep: an exception: ") + e.what());
      }
      lock.lock();
      cv_.wait_for(lock, interval_, [this] { return stop_; });
    }
  });
}

Sweeper::~Sweeper() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

}  // namespace crisp
