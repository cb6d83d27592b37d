// Framing for the agent protocol: a 4-byte big-endian length, then that many
// bytes of protobuf. Every read and write honours one deadline.
#pragma once

#include <sys/un.h>

#include <chrono>
#include <string>

#include "common/deadline.h"
#include "common/result.h"

namespace crisp {

inline constexpr size_t kMaxFrame = 4u << 20;

// The address of a Unix socket at path; fails when the path does not fit.
Result<sockaddr_un> unix_address(const std::string& path);

Status write_frame(int fd, const std::string& payload, const Deadline& deadline);
// Errors of kind kClosed: the peer closed before a frame began; kTimedOut: the deadline passed.
// A frame longer than max_bytes is refused before anything is allocated for it.
Result<std::string> read_frame(int fd, const Deadline& deadline, size_t max_bytes = kMaxFrame);

// Reads exactly len bytes from a stream socket; kClosed when it ends first.
Status read_exactly(int fd, char* data, size_t len, const Deadline& deadline);

}  // namespace crisp
