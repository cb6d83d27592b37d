#include "agent/steps/step_work.h"

#include <thread>

namespace crisp {
namespace {

// How often a wait looks again.
constexpr std::chrono::milliseconds kLookAgain{20};

// Steady: a wall clock stepped back would make work look recent for as long.
int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

StepWork::Busy::Busy(StepWork& work, Work kind) : work_(work), kind_(kind) {
  std::lock_guard lock(work_.mu_);
  started_ = work_.under_[static_cast<int>(kind_)].started.insert(steady_ns());
}

StepWork::Busy::~Busy() {
  std::lock_guard lock(work_.mu_);
  Under& under = work_.under_[static_cast<int>(kind_)];
  under.started.erase(started_);
  under.last_ended = steady_ns();
}

bool StepWork::recent(Work kind) const {
  std::lock_guard lock(mu_);
  const Under& under = under_[static_cast<int>(kind)];
  int64_t now = steady_ns();
  bool under_way = !under.started.empty() && now - *under.started.rbegin() < longest_.count();
  return under_way || (under.last_ended && now - *under.last_ended < quiet_.count());
}

bool StepWork::wait_for_quiet_creates(std::chrono::milliseconds most, int most_waiting) {
  if (stopping_) return false;
  if (!recent(Work::kCreate)) return true;
  if (waiting_.fetch_add(1) >= most_waiting) {
    waiting_--;
    return false;
  }
  auto until = std::chrono::steady_clock::now() + most;
  while (!stopping_ && recent(Work::kCreate) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(kLookAgain);
  waiting_--;
  return !recent(Work::kCreate);
}

}  // namespace crisp
