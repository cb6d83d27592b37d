// PullSlots: the pulls under way on the node, each on a thread of its own, counted by
// the user who started it, within the node's and each user's limit.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>

#include "common/result.h"

namespace crisp {

class PullSlots {
 public:
  PullSlots(int per_node, int per_user) : per_node_(per_node), per_user_(per_user) {}
  // A slot for a pull uid starts (0: an admin's, no per-user limit); the error says which limit.
  Status take(uint32_t uid);
  // The pull's thread ended, or never started.
  void give(uint32_t uid);
  // Returns once no pull holds a slot.
  void wait_idle();

 private:
  const int per_node_, per_user_;
  std::mutex mu_;
  std::condition_variable idle_;
  std::map<uint32_t, int> by_uid_;
};

}  // namespace crisp
