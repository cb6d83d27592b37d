#include "common/wire.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "common/client.h"

using namespace std::chrono_literals;

namespace {

struct Pair {
  int fd[2];
  Pair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fd), 0); }
  ~Pair() {
    close(fd[0]);
    close(fd[1]);
  }
};

TEST(Wire, RoundTripsLargeFrames) {
  Pair p;
  std::string big(1 << 20, 'x');
  std::thread writer([&] { EXPECT_TRUE(crisp::write_frame(p.fd[0], big, crisp::Deadline(5s)).ok()); });
  auto got = crisp::read_frame(p.fd[1], crisp::Deadline(5s));
  writer.join();
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_EQ(*got, big);
}

TEST(Wire, ReadTimesOut) {
  Pair p;
  auto t0 = std::chrono::steady_clock::now();
  auto got = crisp::read_frame(p.fd[1], crisp::Deadline(200ms));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error(), "timed out");
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 190ms);
}

TEST(Wire, RejectsOversizedAndTruncated) {
  Pair p;
  unsigned char huge[4] = {0x7f, 0xff, 0xff, 0xff};
  ASSERT_EQ(write(p.fd[0], huge, 4), 4);
  auto got = crisp::read_frame(p.fd[1], crisp::Deadline(1s));
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().find("exceeds"), std::string::npos);

  Pair q;
  unsigned char partial[6] = {0, 0, 0, 10, 'a', 'b'};
  ASSERT_EQ(write(q.fd[0], partial, 6), 6);
  close(q.fd[0]);
  q.fd[0] = socket(AF_UNIX, SOCK_STREAM, 0);  // keep the destructor's close valid
  got = crisp::read_frame(q.fd[1], crisp::Deadline(1s));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error(), "truncated frame");
}

TEST(Client, AgentNotRunningFailsAtOnceWithAHint) {
  crisp::v1::Request req;
  req.mutable_stats();
  auto t0 = std::chrono::steady_clock::now();
  auto r = crisp::call_agent("/nonexistent/crispd.sock", req, 5s);
  ASSERT_FALSE(r.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  EXPECT_NE(r.error().find("is crispd running"), std::string::npos) << r.error();
}

}  // namespace

namespace {

// A listening Unix socket at path that never accepts; addr is its address.
int listen_only(const std::string& path, int backlog, sockaddr_un& addr) {
  int l = socket(AF_UNIX, SOCK_STREAM, 0);
  addr = {};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  unlink(path.c_str());
  if (bind(l, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(l, backlog) != 0) return -1;
  return l;
}

TEST(Client, HungAgentTimesOutOnSilence) {
  // A listener that accepts (through the backlog) and never answers, as a stopped crispd does.
  std::string path = "/tmp/crisp-hung-" + std::to_string(getpid()) + ".sock";
  sockaddr_un addr{};
  int l = listen_only(path, 4, addr);
  ASSERT_GE(l, 0);
  crisp::v1::Request req;
  req.mutable_stats();
  auto t0 = std::chrono::steady_clock::now();
  auto r = crisp::call_agent(path, req, 60s, 1s);
  auto took = std::chrono::steady_clock::now() - t0;
  close(l);
  unlink(path.c_str());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("did not answer within 1 s: is it hung?"), std::string::npos) << r.error();
  EXPECT_LT(took, 5s);
}

// A crispd that accepts nothing (stopped, or its backlog full of a user's
// connections): connect() itself would wait for ever on a blocking socket.
TEST(Client, AFullBacklogTimesOutInConnect) {
  std::string path = "/tmp/crisp-full-" + std::to_string(getpid()) + ".sock";
  sockaddr_un addr{};
  int l = listen_only(path, 0, addr);
  ASSERT_GE(l, 0);
  std::vector<int> fillers;
  for (int i = 0; i < 8; ++i) {  // never accepted: the backlog fills
    int f = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (connect(f, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      close(f);
      break;
    }
    fillers.push_back(f);
  }
  crisp::v1::Request req;
  req.mutable_stats();
  auto t0 = std::chrono::steady_clock::now();
  auto r = crisp::call_agent(path, req, 500ms, 500ms);
  auto took = std::chrono::steady_clock::now() - t0;
  for (int f : fillers) close(f);
  close(l);
  unlink(path.c_str());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error_kind(), crisp::ErrorKind::kTimedOut) << r.error();
  EXPECT_NE(r.error().find("accepts no connection: is it hung?"), std::string::npos) << r.error();
  EXPECT_LT(took, 3s);
}

}  // namespace
