// crispd's connections against the fake CRI: the Server's to its clients (refusals, what a
// user sees, keepalives through a long pull) and the CRI client's to an unreachable runtime.
#include <gtest/gtest.h>

#include <thread>

#include "agent/cri/cri_client.h"
#include "common/client.h"
#include "tests/unit/fake_cri.h"

namespace crisp_test {
namespace {

TEST_F(AgentTest, ServerRefusesNonRootAndShowsUsersOnlyTheirJobs) {
  crisp::Server server(steps_->units.served());
  crisp::v1::Request create;
  *create.mutable_create_step() = step(13, 0, 1000);
  auto denied = server.handle(create, {1, 1000, 1000});
  EXPECT_NE(denied.error().find("permission denied"), std::string::npos);
  EXPECT_TRUE(fake_.containers.empty());

  ASSERT_TRUE(server.handle(create, {1, 0, 0}).error().empty());
  *create.mutable_create_step() = step(14, 0, 2000);
  ASSERT_TRUE(server.handle(create, {1, 0, 0}).error().empty());

  crisp::v1::Request list;
  list.mutable_list();
  auto mine = server.handle(list, {1, 1000, 1000});
  ASSERT_EQ(mine.list().steps_size(), 1);
  EXPECT_EQ(mine.list().steps(0).job_id(), 13u);
  EXPECT_EQ(server.handle(list, {1, 0, 0}).list().steps_size(), 2);
}

TEST_F(AgentTest, LongPullKeepsTheClientWaitingWithKeepalives) {
  // crispd checks each second whether a keepalive is due, so one goes out up to a second
  // after kKeepaliveInterval, later on a loaded machine: the margins below allow for that.
  fake_.pull_delay = crisp::kKeepaliveInterval + 4s;
  crisp::Server server(steps_->units.served());
  std::string sock = dir_ + "/crispd.sock";
  ASSERT_TRUE(server.listen_on(sock).ok());
  std::atomic<bool> stop{false};
  std::thread serving([&] { server.serve(stop); });
  crisp::v1::Request req;
  *req.mutable_create_step() = step(15, 0);
  // Silence allowed: less than the pull takes, more than the keepalive interval.
  auto r = crisp::call_agent(sock, req, 60s, crisp::kKeepaliveInterval + 3s);
  stop = true;
  serving.join();
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_GT(r->create_step().holder_pid(), 0);
}

TEST(CriClient, UnreachableRuntimeIsNamed) {
  crisp::CriClient c("unix:///nonexistent/cri.sock", 2s, 2s, 1);
  auto v = c.version();
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().find("unreachable"), std::string::npos) << v.error();
}

}  // namespace
}  // namespace crisp_test
