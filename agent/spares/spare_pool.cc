#include "agent/spares/spare_pool.h"

#include <algorithm>
#include <utility>

namespace crisp {

namespace {

// A key's steps arriving this soon after the last one's setup ended are one burst. Slurm
// launches a burst's steps one after another (32 at once: about 100 ms apart here), and each
// claim takes milliseconds, so few are ever set up at the same time: counted so, a burst of 32
// kept 24 spares. Spares are made only after such a pause (StepWork's quiet time), so none is
// made between a burst's steps either.
constexpr std::chrono::milliseconds kBurstGap{200};

}  // namespace

SparePool::Arrival::Arrival(SparePool& pool, SpareKey key) : pool_(pool), key_(std::move(key)) {
  std::lock_guard lock(pool_.mu_);
  Slot& slot = pool_.slots_[key_];
  if (slot.arriving++ == 0 && std::chrono::steady_clock::now() - slot.last_left >= kBurstGap) slot.burst = 0;
  slot.demand = std::max(slot.demand, ++slot.burst);
}

SparePool::Arrival::~Arrival() {
  std::lock_guard lock(pool_.mu_);
  auto it = pool_.slots_.find(key_);
  if (it == pool_.slots_.end()) return;
  if (it->second.arriving > 0) it->second.arriving--;
  it->second.last_left = std::chrono::steady_clock::now();
}

size_t SparePool::held(const std::optional<uint32_t>& uid) const {
  size_t n = 0;
  for (const auto& [key, slot] : slots_)
    if (!uid || key.uid == *uid) n += slot.coming();
  return n;
}

std::optional<Spare> SparePool::take_least_recent(const SpareKey& key, const std::optional<uint32_t>& uid) {
  Slot* oldest = nullptr;
  for (auto& [k, slot] : slots_)
    if (k != key && !slot.ready.empty() && (!uid || k.uid == *uid) && (!oldest || slot.last_use_ns < oldest->last_use_ns))
      oldest = &slot;
  if (!oldest) return std::nullopt;
  Spare out = std::move(oldest->ready.back());
  oldest->ready.pop_back();
  return out;
}

bool SparePool::room_for(const SpareKey& key, Use& use) {
  std::optional<Spare> evicted;
  if (held(key.uid) >= limits_.per_user) {
    evicted = take_least_recent(key, key.uid);
    if (!evicted) return false;  // the user's others are all being made, or their own key's
  } else if (held(std::nullopt) >= limits_.per_node) {
    evicted = take_least_recent(key, std::nullopt);
    if (!evicted) return false;
  }
  if (evicted) use.evicted.push_back(std::move(*evicted));
  return true;
}

SparePool::Use SparePool::note_use(const SpareKey& key, int64_t now_ns) {
  Use use;
  if (limits_.per_node == 0) return use;
  std::lock_guard lock(mu_);
  Slot& slot = slots_[key];
  slot.last_use_ns = now_ns;
  while (slot.coming() < slot.demand && room_for(key, use)) {
    slot.making++;
    use.make++;
  }
  return use;
}

bool SparePool::made(const SpareKey& key, Spare spare) {
  std::lock_guard lock(mu_);
  Slot& slot = slots_[key];
  if (slot.making > 0) slot.making--;
  if (slot.cancelled > 0) {
    slot.cancelled--;
    return false;
  }
  slot.ready.push_back(std::move(spare));
  return true;
}

void SparePool::unmade(const SpareKey& key) {
  std::lock_guard lock(mu_);
  auto it = slots_.find(key);
  if (it == slots_.end()) return;
  Slot& slot = it->second;
  if (slot.making > 0) slot.making--;
  slot.cancelled = std::min(slot.cancelled, slot.making);
}

std::optional<Spare> SparePool::take(const SpareKey& key) {
  std::lock_guard lock(mu_);
  auto it = slots_.find(key);
  if (it == slots_.end() || it->second.ready.empty()) return std::nullopt;
  Spare out = std::move(it->second.ready.front());
  it->second.ready.pop_front();
  taken_.insert(out.id);
  return out;
}

size_t SparePool::demand(const SpareKey& key) const {
  std::lock_guard lock(mu_);
  auto it = slots_.find(key);
  return it == slots_.end() ? 0 : it->second.demand;
}

std::vector<Spare> SparePool::expired(int64_t now_ns) {
  std::lock_guard lock(mu_);
  std::vector<Spare> out;
  int64_t grace_ns = std::chrono::nanoseconds(limits_.grace).count();
  for (auto it = slots_.begin(); it != slots_.end();) {
    Slot& slot = it->second;
    if (now_ns - slot.last_use_ns < grace_ns || slot.arriving > 0) {
      ++it;
      continue;
    }
    std::move(slot.ready.begin(), slot.ready.end(), std::back_inserter(out));
    slot.ready.clear();
    // Those being made stay until made() lands them; the next pass takes them then.
    if (slot.making > 0) {
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
    slot.cancelled = slot.making;
    slot.demand = 1;  // forgotten with them: a user's rm --spares starts afresh
    std::move(slot.ready.begin(), slot.ready.end(), std::back_inserter(out));
    slot.ready.clear();
  }
  return out;
}

void SparePool::drop(const std::string& container_id) {
  std::lock_guard lock(mu_);
  taken_.erase(container_id);
  for (auto& [key, slot] : slots_)
    std::erase_if(slot.ready, [&](const Spare& s) { return s.id == container_id; });
}

bool SparePool::holds(const std::string& container_id) const {
  std::lock_guard lock(mu_);
  if (taken_.count(container_id)) return true;
  for (const auto& [key, slot] : slots_)
    for (const Spare& s : slot.ready)
      if (s.id == container_id) return true;
  return false;
}

size_t SparePool::ready() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [key, slot] : slots_) n += slot.ready.size();
  return n;
}

size_t SparePool::making() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [key, slot] : slots_) n += slot.being_made();
  return n;
}

}  // namespace crisp
