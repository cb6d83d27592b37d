// Holders: the pidfds of the holders this crispd started, by container id, until
// their container is removed (a restarted crispd knows none: containerd's stop ends
// those). Ending one by its pidfd is immediate, where containerd's stop waits.
// Calls: the process ender it is given.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "common/fd.h"

namespace crisp {

// Ends a process by its pidfd and returns once it has exited (holder_process.h's
// end_process; the fake CRI's tests give their own, whose "holder" is the test itself).
using ProcessEnder = std::function<void(int pidfd)>;

class Holders {
 public:
  explicit Holders(ProcessEnder end) : end_(std::move(end)) {}
  // pid, if it still is the process that started at start_time.
  void keep(const std::string& container_id, int pid, uint64_t start_time);
  // false: not one this crispd knows.
  bool end(const std::string& container_id);
  void forget(const std::string& container_id);

 private:
  const ProcessEnder end_;
  std::mutex mu_;
  std::map<std::string, Fd> pidfds_;
};

}  // namespace crisp
