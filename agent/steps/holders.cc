#include "agent/steps/holders.h"

#include <fcntl.h>

#include "agent/host/holder_process.h"

namespace crisp {

void Holders::keep(const std::string& container_id, int pid, uint64_t start_time) {
  auto fd = open_process(pid, start_time);
  if (!fd) return;  // containerd's stop ends it
  std::lock_guard lock(mu_);
  pidfds_[container_id] = std::move(*fd);
}

bool Holders::end(const std::string& container_id) {
  Fd mine;
  {
    std::lock_guard lock(mu_);
    auto it = pidfds_.find(container_id);
    if (it == pidfds_.end()) return false;
    mine = Fd(fcntl(it->second.get(), F_DUPFD_CLOEXEC, 0));
  }
  if (!mine) return false;
  end_(mine.get());
  return true;
}

void Holders::forget(const std::string& container_id) {
  std::lock_guard lock(mu_);
  pidfds_.erase(container_id);
}

}  // namespace crisp
