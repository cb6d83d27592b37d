#include "agent/connection_slots.h"

namespace crisp {
namespace {

ConnectionSlots::Denied too_many(const std::string& which, std::string counts = "") {
  return {"crispd has too many connections open: " + which + ": try again", std::move(counts)};
}

}  // namespace

std::optional<ConnectionSlots::Denied> ConnectionSlots::take(uid_t uid) {
  std::lock_guard lock(mu_);
  if (uid == 0) {
    if (root_ >= kMaxRoot) return too_many("root holds its limit of " + std::to_string(kMaxRoot));
    root_++;
    return std::nullopt;
  }
  int& mine = per_user_[uid];
  if (mine >= kMaxPerUser || users_ >= kMaxUsers) {
    std::string counts = std::to_string(mine) + " of its own and " + std::to_string(users_) + " of all users open";
    std::string which = mine >= kMaxPerUser
                            ? "uid " + std::to_string(uid) + " holds the per-user limit of " + std::to_string(kMaxPerUser)
                            : "all users together hold the node-wide limit of " + std::to_string(kMaxUsers);
    if (mine == 0) per_user_.erase(uid);
    return too_many(which, counts);
  }
  mine++;
  users_++;
  return std::nullopt;
}

void ConnectionSlots::give(uid_t uid) {
  std::lock_guard lock(mu_);
  if (uid == 0) {
    root_--;
    return;
  }
  users_--;
  if (auto it = per_user_.find(uid); it != per_user_.end() && --it->second == 0) per_user_.erase(it);
}

}  // namespace crisp
