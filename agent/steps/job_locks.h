// JobLocks: the per-job and per-user locks every unit that touches a job's or a
// user's containers takes. Calls nothing.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>

namespace crisp {

// A lock that keeps its mutex alive: a job's mutex leaves the table at the job's end.
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
  // At a job's end: a node runs many jobs, their mutexes must not pile up.
  void forget_job(uint32_t job_id);

 private:
  std::shared_ptr<std::shared_mutex> slot(uint64_t key);

  std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<std::shared_mutex>> slots_;  // jobs by id, users by 1<<32 | uid
};

}  // namespace crisp
