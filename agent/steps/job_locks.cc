#include "agent/steps/job_locks.h"

namespace crisp {

std::shared_ptr<std::shared_mutex> JobLocks::slot(uint64_t key) {
  std::lock_guard lock(mu_);
  auto& m = slots_[key];
  if (!m) m = std::make_shared<std::shared_mutex>();
  return m;
}

// Only when no other thread holds or waits on it (the table's reference and the
// caller's are all): a mutex erased under a waiter would let a newcomer take a
// second one for the same job. slot() copies under mu_, so the count cannot grow
// while it is read here.
void JobLocks::forget_job(uint32_t job_id) {
  if (job_id == 0) return;  // named containers of global scope: every job's
  std::lock_guard lock(mu_);
  auto it = slots_.find(job_id);
  if (it != slots_.end() && it->second.use_count() <= 2) slots_.erase(it);
}

WholeLock JobLocks::lock_job(uint32_t job_id) { return WholeLock(slot(job_id)); }
SharedLock JobLocks::share_job(uint32_t job_id) { return SharedLock(slot(job_id)); }
WholeLock JobLocks::lock_user(uint32_t uid) { return WholeLock(slot(uint64_t{1} << 32 | uid)); }
SharedLock JobLocks::share_user(uint32_t uid) { return SharedLock(slot(uint64_t{1} << 32 | uid)); }

}  // namespace crisp
