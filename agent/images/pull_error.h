// containerd's pull errors as lines that tell the user what to fix. Pure.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace crisp {

enum class PullFailure { kNotFound, kUnauthorized, kForbidden, kRateLimited, kTls, kDns, kUnreachable, kNoSpace, kOther };

// The failure's name in crispd's metrics (crisp_pull_failures_total's reason).
const char* failure_label(PullFailure kind);

struct PullError {
  PullFailure kind = PullFailure::kOther;
  std::string line;
};

// containerd answers a failed PullImage with gRPC's UNKNOWN and its own text;
// the text is all there is to tell a missing image from a refused login.
// retries: how often a rate-limited pull was tried again, for its line.
PullError explain_pull_error(const std::string& ref, const std::string& cri_error, size_t retries);

// A pull cut because nothing arrived for the stall limit.
std::string stall_line(const std::string& ref, std::chrono::seconds limit);

}  // namespace crisp
