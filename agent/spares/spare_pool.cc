#include "agent/spares/spare_pool.h"

#include <utility>

namespace crisp {

size_t SparePool::held(const std::optional<uint32_t>& uid) const {
  size_t n = 0;
  for (const auto& [key, slot] : slots_)
    if ((!uid || key.uid == *uid) && (slot.making || slot.ready)) n++;
  return n;
}

std::optional<Spare> SparePool::take_least_recent(const SpareKey& key, const std::optional<uint32_t>& uid) {
  Slot* oldest = nullptr;
  for (auto& [k, slot] : slots_)
    if (k != key && slot.ready && (!uid || k.uid == *uid) && (!oldest || slot.last_use_ns < oldest->last_use_ns))
      oldest = &slot;
  if (!oldest) return std::nullopt;
  std::optional<Spare> out = std::move(oldest->ready);
  oldest->ready.reset();
  return out;
}

SparePool::Use SparePool::note_use(const SpareKey& key, int64_t now_ns) {
  Use use;
  if (limits_.per_node == 0) return use;
  std::lock_guard lock(mu_);
  Slot& slot = slots_[key];
  slot.last_use_ns = now_ns;
  if (slot.making || slot.ready) return use;
  if (held(key.uid) >= limits_.per_user) {
    use.evicted = take_least_recent(key, key.uid);
    if (!use.evicted) return use;  // the user's others are all being made
  } else if (held(std::nullopt) >= limits_.per_node) {
    use.evicted = take_least_recent(key, std::nullopt);
    if (!use.evicted) return use;
  }
  slot.making = use.make = true;
  return use;
}

bool SparePool::made(const SpareKey& key, Spare spare) {
  std::lock_guard lock(mu_);
  Slot& slot = slots_[key];
  slot.making = false;
  if (std::exchange(slot.cancelled, false)) return false;
  slot.ready = std::move(spare);
  return true;
}

void SparePool::unmade(const SpareKey& key) {
  std::lock_guard lock(mu_);
  if (auto it = slots_.find(key); it != slots_.end()) it->second.making = it->second.cancelled = false;
}

std::optional<Spare> SparePool::take(const SpareKey& key) {
  std::lock_guard lock(mu_);
  auto it = slots_.find(key);
  if (it == slots_.end() || !it->second.ready) return std::nullopt;
  std::optional<Spare> out = std::move(it->second.ready);
  it->second.ready.reset();
  taken_.insert(out->id);
  return out;
}

std::vector<Spare> SparePool::expired(int64_t now_ns) {
  std::lock_guard lock(mu_);
  std::vector<Spare> out;
  int64_t grace_ns = std::chrono::nanoseconds(limits_.grace).count();
  for (auto it = slots_.begin(); it != slots_.end();) {
    if (now_ns - it->second.last_use_ns < grace_ns) {
      ++it;
      continue;
    }
    if (it->second.ready) out.push_back(std::move(*it->second.ready));
    // One being made stays until made() lands it; the next pass takes it then.
    if (it->second.making) {
      it->second.ready.reset();
      ++it;
    } else {
      it = slots_.erase(it);
    }
  }
  return out;
}

std::vector<Spare> SparePool::take_all(std::optional<uint32_t> uid) {
  std::lock_guard lock(mu_);
  std::vector<Spare> out;
  for (auto& [key, slot] : slots_) {
    if (uid && key.uid != *uid) continue;
    if (slot.making) slot.cancelled = true;
    if (slot.ready) {
      out.push_back(std::move(*slot.ready));
      slot.ready.reset();
    }
  }
  return out;
}

void SparePool::drop(const std::string& container_id) {
  std::lock_guard lock(mu_);
  taken_.erase(container_id);
  for (auto& [key, slot] : slots_)
    if (slot.ready && slot.ready->id == container_id) slot.ready.reset();
}

bool SparePool::holds(const std::string& container_id) const {
  std::lock_guard lock(mu_);
  if (taken_.count(container_id)) return true;
  for (const auto& [key, slot] : slots_)
    if (slot.ready && slot.ready->id == container_id) return true;
  return false;
}

size_t SparePool::ready() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [key, slot] : slots_) n += slot.ready ? 1 : 0;
  return n;
}

}  // namespace crisp
