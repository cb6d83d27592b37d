#include "agent/steps/step_work.h"

#include <thread>

#include "common/time.h"

namespace crisp {
namespace {

// How often a wait looks again.
constexpr std::chrono::milliseconds kLookAgain{20};

}  // namespace

StepWork::Busy::Busy(StepWork& work, Work kind) : work_(work), kind_(kind) { work_.busy_[static_cast<int>(kind_)]++; }

StepWork::Busy::~Busy() {
  work_.idle_since_ns_[static_cast<int>(kind_)] = now_ns();
  work_.busy_[static_cast<int>(kind_)]--;
}

bool StepWork::recent(Work kind) const {
  int i = static_cast<int>(kind);
  return busy_[i] > 0 || now_ns() - idle_since_ns_[i] < quiet_ns_;
}

bool StepWork::wait_for_quiet_creates(std::chrono::milliseconds most, int most_waiting) {
  if (!recent(Work::kCreate)) return true;
  if (waiting_.fetch_add(1) >= most_waiting) {
    waiting_--;
    return false;
  }
  auto until = std::chrono::steady_clock::now() + most;
  while (recent(Work::kCreate) && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(kLookAgain);
  waiting_--;
  return !recent(Work::kCreate);
}

}  // namespace crisp
