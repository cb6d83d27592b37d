#include "agent/steps/job_locks.h"

#include <algorithm>

namespace crisp {

std::shared_ptr<std::shared_mutex> JobLocks::slot(uint64_t key) {
  std::lock_guard lock(mu_);
  auto& weak = slots_[key];
  auto m = weak.lock();
  if (!m) {
    m = std::make_shared<std::shared_mutex>();
    weak = m;
  }
  if (slots_.size() >= prune_at_) {
    std::erase_if(slots_, [](const auto& entry) { return entry.second.expired(); });
    prune_at_ = std::max<size_t>(64, 2 * slots_.size());
  }
  return m;
}

size_t JobLocks::entries() const {
  std::lock_guard lock(mu_);
  return slots_.size();
}

WholeLock JobLocks::lock_job(uint32_t job_id) { return WholeLock(slot(job_id)); }
SharedLock JobLocks::share_job(uint32_t job_id) { return SharedLock(slot(job_id)); }
WholeLock JobLocks::lock_user(uint32_t uid) { return WholeLock(slot(uint64_t{1} << 32 | uid)); }
SharedLock JobLocks::share_user(uint32_t uid) { return SharedLock(slot(uint64_t{1} << 32 | uid)); }

}  // namespace crisp
