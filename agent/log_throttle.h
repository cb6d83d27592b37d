// LogThrottle: what users can make happen at will is logged at most `lines` lines a
// window; the rest is counted, and the count logged when the next window opens.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

namespace crisp {

class LogThrottle {
 public:
  LogThrottle(int lines, std::chrono::seconds window) : lines_(lines), window_(window) {}
  // Whether one more line may be logged now.
  bool may_log();

 private:
  const int lines_;
  const std::chrono::seconds window_;
  std::mutex mu_;
  std::chrono::steady_clock::time_point start_{};
  int logged_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace crisp
