#include "agent/images/pull_slots.h"

#include <string>

namespace crisp {

Status PullSlots::take(uint32_t uid) {
  std::lock_guard l(mu_);
  int total = 0;
  for (const auto& [u, n] : by_uid_) total += n;
  if (total >= per_node_)
    return fail("crispd on this node is already pulling " + std::to_string(total) + " images: try again in a while");
  auto mine = by_uid_.find(uid);
  if (uid != 0 && mine != by_uid_.end() && mine->second >= per_user_)
    return fail("you already have " + std::to_string(per_user_) +
                " image pulls under way on this node (cancelled steps' pulls go on): try again when they are done");
  by_uid_[uid]++;
  return Ok{};
}

void PullSlots::give(uint32_t uid) {
  std::lock_guard l(mu_);
  auto it = by_uid_.find(uid);
  if (it != by_uid_.end() && --it->second <= 0) by_uid_.erase(it);
  if (by_uid_.empty()) idle_.notify_all();
}

void PullSlots::wait_idle() {
  std::unique_lock l(mu_);
  idle_.wait(l, [&] { return by_uid_.empty(); });
}

}  // namespace crisp
