// A point in time that every blocking step of one call honours.
#pragma once

#include <algorithm>
#include <chrono>
#include <climits>

namespace crisp {

class Deadline {
 public:
  explicit Deadline(std::chrono::milliseconds in) : at_(std::chrono::steady_clock::now() + in) {}
  // Milliseconds left, at least 0, for poll().
  int remaining_ms() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - std::chrono::steady_clock::now());
    return left.count() > 0 ? static_cast<int>(std::min<long>(left.count(), INT_MAX)) : 0;
  }
  static const Deadline& soonest(const Deadline& a, const Deadline& b) { return a.at_ < b.at_ ? a : b; }

 private:
  std::chrono::steady_clock::time_point at_;
};

}  // namespace crisp
