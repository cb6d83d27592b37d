// Which spare containers a node keeps: for each user, group and image used within the
// grace period, as many ready as its steps once came in one burst (its demand: one for steps
// one after another with pauses between them, N for a burst of N), at most per_node in all and per_user for
// one user (a user naming many images cannot fill the node's). Pure bookkeeping under a
// mutex; crispd makes and removes the containers.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace crisp {

struct SpareKey {
  uint32_t uid = 0, gid = 0;
  std::string image;  // canonical reference
  auto operator<=>(const SpareKey&) const = default;
};

struct Spare {
  std::string id;        // the container's
  std::string image_id;  // what the reference named when it was made: a moved tag makes it stale
  int holder_pid = 0;
  uint64_t holder_start = 0;
  bool rootfs_given = false;  // its root is the user's (user_rootfs.h): mount points made are theirs too
};

struct SpareLimits {
  size_t per_node = 0;  // 0: no spares
  size_t per_user = 8;
  std::chrono::seconds grace{600};
};

class SparePool {
 public:
  explicit SparePool(SpareLimits limits) : limits_(limits) {}

  // A step of key is being set up from now until the Arrival goes. Steps that come while
  // another is, or less than 200 ms after the last one, are one burst: the largest is the
  // key's demand.
  class Arrival {
   public:
    Arrival(SparePool& pool, SpareKey key);
    ~Arrival();
    Arrival(const Arrival&) = delete;
    Arrival& operator=(const Arrival&) = delete;

   private:
    SparePool& pool_;
    SpareKey key_;
  };
  // A step of key started at now: how many spares of it to make so that its demand is
  // ready (the caller then calls made() or unmade() for each), and the ready spares they
  // displace, to remove: at a limit, the least recently used key's (the user's own first).
  struct Use {
    size_t make = 0;
    std::vector<Spare> evicted;
  };
  Use note_use(const SpareKey& key, int64_t now_ns);
  // false: its key's spares were removed while it was made (take_all); the caller removes it.
  bool made(const SpareKey& key, Spare spare);
  void unmade(const SpareKey& key);
  // A ready spare of key (the oldest), taken: no other step can have it. The pool still
  // holds its id (a sweep must not take it for a stray) until drop().
  std::optional<Spare> take(const SpareKey& key);
  // The key's demand: the largest burst of its steps since it was first used.
  size_t demand(const SpareKey& key) const;
  // Ready spares of keys unused for the grace period, taken (the caller removes them).
  std::vector<Spare> expired(int64_t now_ns);
  // The ready spares of uid (every user's: nullopt), taken, those being made refused
  // when made, and their keys' demand forgotten (crispctl rm --spares, crispd's stop).
  std::vector<Spare> take_all(std::optional<uint32_t> uid);
  // A container removed: no longer ready or taken, if it was.
  void drop(const std::string& container_id);
  // Ready, or taken and not yet dropped.
  bool holds(const std::string& container_id) const;
  size_t ready() const;
  // Being made and not refused: ready soon (a bench waits for none before a burst).
  size_t making() const;
  const SpareLimits& limits() const { return limits_; }

 private:
  struct Slot {
    int64_t last_use_ns = 0;
    size_t making = 0;
    size_t cancelled = 0;  // of those, removed while being made: refused when made
    std::deque<Spare> ready;
    size_t arriving = 0;  // its steps being made now
    size_t burst = 0;     // its steps of the burst under way, or of the last one
    std::chrono::steady_clock::time_point last_left;  // when the last step's setup ended
    size_t demand = 1;
    // Being made and not refused (rm --spares): those that will be ready.
    size_t being_made() const { return making - cancelled; }
    // Ready, or being made and not refused.
    size_t coming() const { return being_made() + ready.size(); }
  };
  size_t held(const std::optional<uint32_t>& uid) const;  // made or being made (and not refused)
  // A ready spare of the least recently used key other than key (of uid only, if given), taken.
  std::optional<Spare> take_least_recent(const SpareKey& key, const std::optional<uint32_t>& uid);
  // One more of key's to be made, within the limits (evicting another key's if need be); false: none.
  bool room_for(const SpareKey& key, Use& use);

  SpareLimits limits_;
  mutable std::mutex mu_;
  std::map<SpareKey, Slot> slots_;
  std::set<std::string> taken_;
};

}  // namespace crisp
