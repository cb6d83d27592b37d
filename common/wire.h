// Framing for the agent protocol: a 4-byte big-endian length, then that many
// bytes of protobuf. Every read and write honours one deadline.
#pragma once

#include <chrono>
#include <string>

#include "common/result.h"

namespace crisp {

inline constexpr size_t kMaxFrame = 4u << 20;

class Deadline {
 public:
  explicit Deadline(std::chrono::milliseconds in) : at_(std::chrono::steady_clock::now() + in) {}
  // Milliseconds left, at least 0, for poll().
  int remaining_ms() const;
  static const Deadline& soonest(const Deadline& a, const Deadline& b) { return a.at_ < b.at_ ? a : b; }

 private:
  std::chrono::steady_clock::time_point at_;
};

Status write_frame(int fd, const std::string& payload, const Deadline& deadline);
// An error whose message is "closed" means the peer closed before a frame began.
Result<std::string> read_frame(int fd, const Deadline& deadline);

}  // namespace crisp
