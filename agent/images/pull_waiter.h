// PullWaiter: what a request waiting on a pull is asked and told (the image store's
// side of a request; no gRPC, no store).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace crisp {

// What a request waiting on a pull is asked and told.
struct PullWaiter {
  // Checked every second while it waits: why to stop waiting (its step ended), if so.
  std::function<std::optional<std::string>()> stop;
  // A progress line, once the wait has taken a few seconds and then every few.
  std::function<void(const std::string&)> progress;
  // Whose request: a pull it starts counts against that user's (0: an admin's, no limit).
  uint32_t uid = 0;
};

}  // namespace crisp
