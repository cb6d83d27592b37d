// StepWork: which of crispd's work for steps is under way (a step's container made or
// claimed, a step's or job's containers removed), and since when none has been. Work that
// no step waits for, the spare maker's and the removal of ended steps' containers, waits
// for a quiet moment: runc's work for a container, 100 ms of CPU and more, slows a step
// being launched beside it on a small node. Calls nothing.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>

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
    std::multiset<int64_t>::iterator started_;
  };

  // quiet: how long after the last of a kind ended it still counts as recent (the step's
  // own tasks start then, a burst's later steps are still being launched). longest: work
  // under way longer no longer counts (an image's entrypoint, a site hook, a lock waited
  // for: no runc work, and a user's entrypoint must not hold up the node's for a minute).
  StepWork(std::chrono::milliseconds quiet, std::chrono::milliseconds longest) : quiet_(quiet), longest_(longest) {}

  // Work of this kind began less than `longest` ago and is under way, or ended less than
  // `quiet` ago.
  bool recent(Work kind) const;
  // Waits until no step's container is being made nor was a moment ago, for at most `most`,
  // and not at all where `most_waiting` wait already (each holds its caller's thread, and
  // crispd's connections are bounded), nor once crispd stops. False: it gave up waiting.
  bool wait_for_quiet_creates(std::chrono::milliseconds most, int most_waiting);
  // How many wait so.
  int waiting() const { return waiting_; }
  // crispd stops: every wait ends now, and none begins.
  void stop_waiting() { stopping_ = true; }

 private:
  struct Under {
    std::multiset<int64_t> started;  // steady ns of each under way
    std::optional<int64_t> last_ended;
  };
  const std::chrono::nanoseconds quiet_, longest_;
  mutable std::mutex mu_;
  Under under_[2];
  std::atomic<int> waiting_ = 0;
  std::atomic<bool> stopping_ = false;
};

}  // namespace crisp
