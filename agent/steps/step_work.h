// StepWork: which of crispd's work for steps is under way (a step's container made or
// claimed, a step's or job's containers removed), and since when none has been. Work that
// no step waits for, the spare maker's and the removal of ended steps' containers, waits
// for a quiet moment: runc's work for a container, 100 ms of CPU and more, slows a step
// being launched beside it on a small node. Calls nothing.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace crisp {

class StepWork {
 public:
  enum class Work { kCreate, kRemove };

  // While one lives, work is under way.
  class Busy {
   public:
    Busy(StepWork& work, Work kind);
    ~Busy();
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;

   private:
    StepWork& work_;
    const Work kind_;
  };

  // quiet: how long after the last of a kind ended it still counts as recent (the step's
  // own tasks start then, a burst's later steps are still being launched).
  explicit StepWork(std::chrono::nanoseconds quiet) : quiet_ns_(quiet.count()) {}

  // Work of this kind is under way, or ended less than the quiet time ago.
  bool recent(Work kind) const;
  // Waits until no step's container is being made nor was a moment ago, for at most `most`,
  // and not at all where `most_waiting` removals wait already (each holds its caller's
  // thread, and crispd's connections are bounded). False: it gave up waiting.
  bool wait_for_quiet_creates(std::chrono::milliseconds most, int most_waiting);

 private:
  const int64_t quiet_ns_;
  std::atomic<int> busy_[2] = {0, 0};
  std::atomic<int64_t> idle_since_ns_[2] = {0, 0};
  std::atomic<int> waiting_ = 0;
};

}  // namespace crisp
