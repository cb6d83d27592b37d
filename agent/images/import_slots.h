// crispctl import's admission: each import is a mksquashfs of a whole image,
// run by crispd outside any job, so a user holds at most per_user of them and
// the node at most per_node at once; the rest are refused with a line that says
// which limit, never queued (a queue would be one more thing a user can fill).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include "common/result.h"

namespace crisp {

class ImportSlots {
 public:
  ImportSlots(size_t per_user, size_t per_node) : per_user_(per_user), per_node_(per_node) {}

  // Held while an import runs; its end frees the slot.
  class Slot {
   public:
    Slot(Slot&& o) noexcept : slots_(o.slots_), uid_(o.uid_) { o.slots_ = nullptr; }
    Slot& operator=(Slot&&) = delete;
    ~Slot();

   private:
    friend class ImportSlots;
    Slot(ImportSlots* slots, uint32_t uid) : slots_(slots), uid_(uid) {}
    ImportSlots* slots_;
    uint32_t uid_;
  };

  // A slot for uid, or an error of kind kRefused naming the limit reached.
  Result<Slot> take(uint32_t uid);
  size_t running() const;

 private:
  void give_back(uint32_t uid);
  const size_t per_user_, per_node_;
  mutable std::mutex mu_;
  std::map<uint32_t, size_t> by_user_;
  size_t total_ = 0;
};

}  // namespace crisp
