#include "common/wire.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "common/strings.h"

namespace crisp {
namespace {

Status wait_for(int fd, short events, const Deadline& deadline) {
  for (;;) {
    struct pollfd p = {fd, events, 0};
    int n = poll(&p, 1, deadline.remaining_ms());
    if (n > 0) return Ok{};
    if (n == 0) return fail(ErrorKind::kTimedOut, "timed out");
    if (errno != EINTR) return fail("poll: " + errno_text(errno));
  }
}

Status write_all(int fd, const char* data, size_t len, const Deadline& deadline) {
  while (len > 0) {
    if (auto w = wait_for(fd, POLLOUT, deadline); !w) return w;
    ssize_t n = send(fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return fail("send: " + errno_text(errno));
    }
    data += n;
    len -= static_cast<size_t>(n);
  }
  return Ok{};
}

// Reads exactly len bytes; got reports how many arrived before an early EOF.
Status read_all(int fd, char* data, size_t len, const Deadline& deadline, size_t& got) {
  got = 0;
  while (got < len) {
    if (auto w = wait_for(fd, POLLIN, deadline); !w) return w;
    ssize_t n = recv(fd, data + got, len - got, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return fail("recv: " + errno_text(errno));
    }
    if (n == 0) return fail(ErrorKind::kClosed, "closed");
    got += static_cast<size_t>(n);
  }
  return Ok{};
}

}  // namespace

Result<sockaddr_un> unix_address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return fail("socket path too long: " + path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

Status write_frame(int fd, const std::string& payload, const Deadline& deadline) {
  if (payload.size() > kMaxFrame) return fail("message too large");
  uint32_t n = static_cast<uint32_t>(payload.size());
  unsigned char header[4] = {static_cast<unsigned char>(n >> 24), static_cast<unsigned char>(n >> 16),
                             static_cast<unsigned char>(n >> 8), static_cast<unsigned char>(n)};
  if (auto s = write_all(fd, reinterpret_cast<const char*>(header), 4, deadline); !s) return s;
  return write_all(fd, payload.data(), payload.size(), deadline);
}

Status read_exactly(int fd, char* data, size_t len, const Deadline& deadline) {
  size_t got = 0;
  return read_all(fd, data, len, deadline, got);
}

Result<std::string> read_frame(int fd, const Deadline& deadline, size_t max_bytes) {
  unsigned char header[4];
  size_t got = 0;
  if (auto s = read_all(fd, reinterpret_cast<char*>(header), 4, deadline, got); !s)
    return got > 0 && s.error_kind() == ErrorKind::kClosed ? fail("truncated frame") : s.take_error();
  uint32_t n = (uint32_t{header[0]} << 24) | (uint32_t{header[1]} << 16) | (uint32_t{header[2]} << 8) | header[3];
  if (n > max_bytes) return fail("frame of " + std::to_string(n) + " bytes exceeds the limit of " + std::to_string(max_bytes));
  std::string payload(n, '\0');
  if (auto s = read_all(fd, payload.data(), n, deadline, got); !s)
    return s.error_kind() == ErrorKind::kClosed ? fail("truncated frame") : s.take_error();
  return payload;
}

}  // namespace crisp
