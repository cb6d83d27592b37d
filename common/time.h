// Wall-clock time as the CRI counts it (created_at).
#pragma once

#include <chrono>
#include <cstdint>

namespace crisp {

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace crisp
