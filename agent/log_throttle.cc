#include "agent/log_throttle.h"

#include <string>

#include "common/log.h"

namespace crisp {

bool LogThrottle::may_log() {
  std::lock_guard lock(mu_);
  auto now = std::chrono::steady_clock::now();
  if (now - start_ > window_) {
    if (dropped_) log_warn(std::to_string(dropped_) + " more lines like the last were not logged");
    start_ = now;
    logged_ = 0;
    dropped_ = 0;
  }
  if (logged_ < lines_) {
    logged_++;
    return true;
  }
  dropped_++;
  return false;
}

}  // namespace crisp
