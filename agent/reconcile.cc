#include "agent/reconcile.h"

#include "agent/cri/labels.h"
#include "common/log.h"
#include "common/time.h"

namespace crisp {

uint64_t sweep_once(StepManager& steps, std::chrono::seconds sandbox_grace) {
  CriClient& cri = steps.cri();
  const Labels managed = {{labels::kManaged, "true"}};
  uint64_t removed = 0;

  auto containers = cri.list_containers(managed);
  if (!containers) {
    log_warn("sweep: " + containers.error());
    return 0;
  }
  for (const cri::Container& c : *containers) {
    if (c.state() != cri::CONTAINER_EXITED && c.state() != cri::CONTAINER_UNKNOWN) continue;
    uint32_t job = labels::number_of(c.labels(), labels::kJob);
    auto lock = steps.lock_job(job);
    v1::ReleaseResponse out;
    if (steps.remove_containers({c}, out); out.removed_containers()) {
      log_info("sweep: removed exited container " + c.id().substr(0, 12) + " of job " + std::to_string(job));
      removed++;
    }
  }

  auto sandboxes = cri.list_pod_sandboxes(managed);
  if (!sandboxes) {
    log_warn("sweep: " + sandboxes.error());
    return removed;
  }
  int64_t now = now_ns();
  for (const cri::PodSandbox& sb : *sandboxes) {
    // Kept for the user's next job, or still waiting for its first container.
    if (sb.state() == cri::SANDBOX_READY &&
        now - steps.last_used_ns(sb) < std::chrono::nanoseconds(sandbox_grace).count())
      continue;
    auto lock = steps.lock_user(labels::number_of(sb.labels(), labels::kUid));
    bool gone = false;
    if (auto s = steps.remove_sandbox_if_empty(sb, gone); !s) log_warn("sweep: " + s.error());
    if (gone) {
      log_info("sweep: removed the idle sandbox " + sb.id().substr(0, 12) + " of " + labels::value_of(sb.labels(), labels::kPodName));
      removed++;
    }
  }
  return removed;
}

Sweeper::Sweeper(StepManager& steps, std::chrono::seconds interval, std::chrono::seconds sandbox_grace)
    : steps_(steps), interval_(interval), grace_(sandbox_grace) {
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stop_) {
      lock.unlock();
      // Labels read back are what anyone with containerd's socket wrote: nothing may end this thread.
      try {
        swept_ += sweep_once(steps_, grace_);
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
