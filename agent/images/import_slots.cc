#include "agent/images/import_slots.h"

#include <string>

namespace crisp {

ImportSlots::Slot::~Slot() {
  if (slots_) slots_->give_back(uid_);
}

Result<ImportSlots::Slot> ImportSlots::take(uint32_t uid) {
  std::lock_guard lock(mu_);
  auto mine = by_user_.find(uid);
  if (mine != by_user_.end() && mine->second >= per_user_)
    return fail(ErrorKind::kRefused, "you already run " + std::to_string(per_user_) +
                                         " crispctl import(s) on this node, the most one user may: wait for it to end");
  if (total_ >= per_node_)
    return fail(ErrorKind::kRefused, "this node already runs " + std::to_string(per_node_) +
                                         " crispctl imports, the most it allows (crispd --max-imports): try again later");
  ++by_user_[uid];
  ++total_;
  return Slot(this, uid);
}

size_t ImportSlots::running() const {
  std::lock_guard lock(mu_);
  return total_;
}

void ImportSlots::give_back(uint32_t uid) {
  std::lock_guard lock(mu_);
  if (--by_user_[uid] == 0) by_user_.erase(uid);
  --total_;
}

}  // namespace crisp
