// UserSandboxes against the fake CRI: one sandbox per user, shared by their steps and jobs,
// kept idle for the sweep's grace, its id remembered and asked for again only when it is gone.
#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/unit/fake_cri.h"

namespace crisp_test {
namespace {

TEST_F(AgentTest, StepsShareTheUserSandboxWhichOutlivesTheJobUntilIdle) {
  auto a = steps_->create(step(7, 0));
  auto b = steps_->create(step(7, 1));
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(b.ok()) << b.error();
  const std::string sandbox = sandbox_of(*a);
  EXPECT_EQ(sandbox_of(*b), sandbox);
  EXPECT_EQ(a->holder_pid(), getpid());
  EXPECT_EQ(a->image_env_size(), 1);
  for (uint32_t s : {0u, 1u}) {
    auto r = steps_->release_step(7, s);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->removed_containers(), 1u);
  }
  EXPECT_TRUE(fake_.containers.empty());
  ASSERT_EQ(fake_.sandboxes.size(), 1u) << "kept for the job's next step";
  auto c = steps_->create(step(7, 2));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(sandbox_of(*c), sandbox);
  ASSERT_TRUE(steps_->release_step(7, 2).ok());
  auto end = steps_->release_job(7);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(fake_.sandboxes.size(), 1u) << "the job's end leaves the user's sandbox";
  auto next_job = steps_->create(step(8, 0));
  ASSERT_TRUE(next_job.ok());
  EXPECT_EQ(sandbox_of(*next_job), sandbox) << "the user's next job reuses it";
  auto other_user = steps_->create(step(9, 0, 1001));
  ASSERT_TRUE(other_user.ok());
  EXPECT_NE(sandbox_of(*other_user), sandbox) << "one sandbox per user";
  ASSERT_TRUE(steps_->release_job(8).ok());
  ASSERT_TRUE(steps_->release_job(9).ok());
  EXPECT_EQ(steps_->sweep(3600s), 0u) << "idle for less than the grace";
  EXPECT_EQ(fake_.sandboxes.size(), 2u);
  EXPECT_EQ(steps_->sweep(0s), 2u) << "idle past the grace";
  EXPECT_TRUE(fake_.sandboxes.empty());
}

// The user's sandbox id is remembered: only their first create asks containerd for it. A
// sandbox gone behind crispd's back (containerd lost it, an admin removed it) fails the
// create in it; the create then asks again, once, and makes its container in a new sandbox.
TEST_F(AgentTest, AUsersSandboxIsAskedForOnlyByTheirFirstCreateAndOnceMoreWhenGone) {
  auto first = steps_->create(step(80, 0));
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_EQ(fake_.sandbox_lists, 1) << "the user's first create looks for their sandbox";
  const std::string sandbox = sandbox_of(*first);
  for (const auto& req : {step(80, 1), step(80, 2), step(81, 0)}) {
    auto next = steps_->create(req);
    ASSERT_TRUE(next.ok()) << next.error();
    EXPECT_EQ(sandbox_of(*next), sandbox);
  }
  EXPECT_EQ(fake_.sandbox_lists, 1) << "the user's later steps and jobs use the sandbox remembered";
  ASSERT_TRUE(steps_->create(step(82, 0, 1001)).ok());
  EXPECT_EQ(fake_.sandbox_lists, 2) << "another user's first create looks for theirs";

  ASSERT_TRUE(steps_->release_job(80).ok());
  ASSERT_TRUE(steps_->release_job(81).ok());
  {
    std::lock_guard l(fake_.mu);
    ASSERT_EQ(fake_.sandboxes.erase(sandbox), 1u);
  }
  auto after = steps_->create(step(83, 0));
  ASSERT_TRUE(after.ok()) << after.error();
  EXPECT_EQ(fake_.sandbox_lists, 3) << "asked again, once";
  const std::string renewed = sandbox_of(*after);
  EXPECT_FALSE(renewed.empty());
  EXPECT_NE(renewed, sandbox) << "a new sandbox";
  auto again = steps_->create(step(83, 1));
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(sandbox_of(*again), renewed);
  EXPECT_EQ(fake_.sandbox_lists, 3) << "the new sandbox remembered";
}

// A burst of one user's steps: their containers are created side by side in the sandbox
// already there (the user's lock shared), not one after another.
TEST_F(AgentTest, AUsersStepsAreCreatedSideBySideInTheirSandbox) {
  ASSERT_TRUE(steps_->create(step(84, 0)).ok()) << "the sandbox made";
  fake_.create_delay = 50ms;
  EXPECT_EQ(create_at_once(84, 1, 6), 6);
  EXPECT_GE(fake_.most_creating, 2) << "creates overlapped";
  EXPECT_LE(fake_.most_creating, 4) << "within the client's 4 task slots";
}

}  // namespace
}  // namespace crisp_test
