// JobLocks: the per-job and per-user locks every unit that touches a job's or a
// user's containers takes. Calls nothing.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>

namespace crisp {

// A lock that keeps its mutex alive: the table holds a job's or user's mutex only while a
// lock holds or waits on it, so none piles up on a node that runs many jobs.
template <class Lock>
struct SlotLock {
  explicit SlotLock(std::shared_ptr<std::shared_mutex> m) : mutex(std::move(m)), lock(*mutex) {}
  std::shared_ptr<std::shared_mutex> mutex;
  Lock lock;
};
using WholeLock = SlotLock<std::unique_lock<std::shared_mutex>>;
using SharedLock = SlotLock<std::shared_lock<std::shared_mutex>>;

class JobLocks {
 public:
  // Whole: a job's named containers, its end, the sweep. Shared: one of its
  // unnamed steps, which touches only its own container.
  WholeLock lock_job(uint32_t job_id);
  SharedLock share_job(uint32_t job_id);
  // Whole: finding or making a user's sandbox, its removal by the sweep. Shared: a
  // container created in the sandbox already found, beside the user's other creates.
  WholeLock lock_user(uint32_t uid);
  SharedLock share_user(uint32_t uid);
  // The table's entries, those of mutexes no lock holds any more included until pruned:
  // at most twice the live ones and 64.
  size_t entries() const;

 private:
  std::shared_ptr<std::shared_mutex> slot(uint64_t key);

  mutable std::mutex mu_;
  // Jobs by id, users by 1<<32 | uid. A mutex is the locks' that hold or wait on it: one
  // erased while a thread waits on it would let a newcomer take a second one for the same job.
  std::map<uint64_t, std::weak_ptr<std::shared_mutex>> slots_;
  size_t prune_at_ = 64;
};

}  // namespace crisp
