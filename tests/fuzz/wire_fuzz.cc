// What a client writes on crispd's socket: frames, then the request inside.
#include <sys/socket.h>
#include <unistd.h>

#include "common/fd.h"
#include "common/wire.h"
#include "proto/crisp.pb.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 256 << 10) return 0;  // the socket pair's buffer
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 0;
  crisp::Fd ours(sv[0]), theirs(sv[1]);
  int sndbuf = 512 << 10;
  setsockopt(theirs.get(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  if (write(theirs.get(), data, size) != static_cast<ssize_t>(size)) return 0;
  theirs.reset();
  for (;;) {
    auto frame = crisp::read_frame(ours.get(), crisp::Deadline(std::chrono::milliseconds(100)), 64 << 10);
    if (!frame) break;
    crisp::v1::Request req;
    (void)req.ParseFromString(*frame);
  }
  return 0;
}
