// PhaseClock: where a step's setup time goes, phase by phase: for the log and the
// metrics, and the phase under way names where a failure happened. Calls nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace crisp {

// Milliseconds since t0, for a log line or an answer's timing.
inline int64_t ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
}

class PhaseClock {
 public:
  using Clock = std::chrono::steady_clock;
  // The phase under way ends, phase starts now.
  void begin(const char* phase) {
    end();
    phase_ = phase;
  }
  // The phase under way ends (none is after).
  void end() {
    auto now = Clock::now();
    if (*phase_) laps_.emplace_back(phase_, std::chrono::duration<double>(now - last_).count());
    last_ = now;
    phase_ = "";
  }
  const char* phase() const { return phase_; }
  const std::vector<std::pair<const char*, double>>& laps() const { return laps_; }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  // "paths 6, devices 0, image 2, ..." in ms.
  std::string text() const {
    std::string out;
    for (const auto& [phase, s] : laps_)
      out += (out.empty() ? "" : ", ") + std::string(phase) + " " + std::to_string(static_cast<int64_t>(s * 1000));
    return out;
  }

 private:
  Clock::time_point start_ = Clock::now(), last_ = start_;
  const char* phase_ = "";
  std::vector<std::pair<const char*, double>> laps_;
};

}  // namespace crisp
