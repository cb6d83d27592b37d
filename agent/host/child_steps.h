// Kernel work done in a forked child (crispd's threads never change namespace):
// the child runs its steps, and answers which one failed and with what errno.
#pragma once

#include <functional>

#include "common/result.h"

namespace crisp {

struct ChildAnswer {
  int step = 0;  // 0: all done; else the step that failed
  int err = 0;   // errno then
};

// Runs steps in a child killed after timeout_ms (or with crispd); its exit is reaped
// aside, off the caller's time. An error when it died or hung.
Result<ChildAnswer> run_child_steps(const std::function<int()>& steps, int timeout_ms);

}  // namespace crisp
