// SpareContainers against the fake CRI, with the claims they leave on disk and the setup
// metrics of a claim.
#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "agent/cri/labels.h"
#include "tests/unit/fake_cri.h"

namespace crisp_test {
namespace {

// Spares: made after a step of a user and image, claimed by that user's next step only (its
// job's labels laid over by the claim record), gone with that step; a spare whose attach
// fails is passed over, removed, and the step gets a container made for it.
TEST_F(AgentTest, ASpareIsClaimedOnceByItsUserAndGoesWithTheStep) {
  auto s = settings();
  s.config.host.dirs = crisp::HostDirs(dir_ + "/tmpfs");
  s.config.spares = {8, 2, 600s};
  s.config.claims_dir = dir_ + "/claims";
  std::vector<crisp::AttachRequest> attached;
  bool attach_fails = false;
  s.seams.attach = [&](const crisp::AttachRequest& a) -> crisp::Status {
    attached.push_back(a);
    return attach_fails ? crisp::fail("cannot mount /data in the container: ENOENT") : crisp::Status(crisp::Ok{});
  };
  Node steps(*client_, *images_, s);
  ASSERT_TRUE(steps.create(step(50, 0, 1000)).ok());
  // The ready spare of uid 1000, waited for: made in the background.
  auto spare_id = [&] {
    std::string id;
    for (int i = 0; i < 100 && id.empty(); ++i, std::this_thread::sleep_for(20ms)) {
      auto all = steps.list(0, 1000);
      if (all)
        for (const auto& st : all->steps())
          if (st.spare()) id = st.container_id();
    }
    return id;
  };
  std::string spare = spare_id();
  ASSERT_FALSE(spare.empty()) << "a spare made after the user's step";
  EXPECT_EQ(steps.units.spares.ready(), 1u);

  auto other = steps.create(step(51, 0, 1001));
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->container_id(), spare) << "another user never gets it";
  EXPECT_EQ(steps.metrics.counts().spares_claimed, 0u);

  auto mine = steps.create(step(52, 0, 1000));
  ASSERT_TRUE(mine.ok()) << mine.error();
  EXPECT_EQ(mine->container_id(), spare);
  EXPECT_EQ(steps.metrics.counts().spares_claimed, 1u);
  ASSERT_EQ(attached.size(), 1u);
  EXPECT_EQ(attached[0].holder_pid, mine->holder_pid());
  auto listed = steps.list(52, -1);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->steps_size(), 1);
  EXPECT_EQ(listed->steps(0).container_id(), spare) << "listed as job 52's, through its claim";
  EXPECT_FALSE(listed->steps(0).spare());
  EXPECT_EQ(access((s.config.claims_dir + "/" + spare).c_str(), F_OK), 0) << "the claim is on disk for a restarted crispd";

  auto released = steps.release_step(52, 0);
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(released->removed_containers(), 1u);
  EXPECT_NE(access((s.config.claims_dir + "/" + spare).c_str(), F_OK), 0) << "the claim goes with the container";
  {
    std::lock_guard l(fake_.mu);
    EXPECT_EQ(fake_.containers.count(spare), 0u);
  }

  std::string second = spare_id();
  ASSERT_FALSE(second.empty()) << "the claim's step made the next spare";
  attach_fails = true;
  auto fallback = steps.create(step(53, 0, 1000));
  ASSERT_TRUE(fallback.ok()) << fallback.error();
  EXPECT_EQ(steps.metrics.counts().spares_passed_over, 1u);
  EXPECT_EQ(steps.metrics.counts().spares_claimed, 1u);
  std::lock_guard l(fake_.mu);
  EXPECT_EQ(fake_.containers.at(fallback->container_id()).labels().at(crisp::labels::kJob), "53")
      << "a container made for the step";
  EXPECT_EQ(fake_.containers.count(second), 0u) << "the spare passed over is removed, never used";

  // Jobs 50, 51 and 53 got containers made for them, 52 a claimed spare.
  const crisp::Metrics& m = steps.metrics;
  EXPECT_EQ(sample(m, "crisp_setup_seconds", {{"kind", "new"}}), 3);
  EXPECT_EQ(sample(m, "crisp_setup_seconds", {{"kind", "spare_claim"}}), 1);
  EXPECT_EQ(sample(m, "crisp_setup_phase_seconds", {{"kind", "spare_claim"}, {"phase", "claim"}}), 1);
  EXPECT_EQ(sample(m, "crisp_setup_phase_seconds", {{"kind", "spare_claim"}, {"phase", "start"}}), -1);
  EXPECT_EQ(sample(m, "crisp_setup_phase_seconds", {{"kind", "new"}, {"phase", "start"}}), 3);
}

// A burst's refill (more than one spare to make) waits until no step's container is being
// removed: a burst's first steps end while its last are launched, and runc's work for a spare
// would slow them. One spare, a step's after another's, is made meanwhile: it is for the next.
TEST_F(AgentTest, ABurstsSparesWaitForItsStepsRemovalsAStepsSpareDoesNot) {
  auto s = settings();
  s.config.spares = {8, 4, 600s};
  Node steps(*client_, *images_, s);
  fake_.create_delay = 300ms;  // the two steps of uid 1000 are made at the same time: a demand of 2
  std::vector<std::thread> burst;
  for (uint32_t i = 0; i < 2; ++i) burst.emplace_back([&, i] { EXPECT_TRUE(steps.create(step(60, i, 1000)).ok()); });
  for (auto& t : burst) t.join();
  fake_.create_delay = 0ms;
  fake_.stop_delay = 1000ms;
  std::thread release([&] { EXPECT_TRUE(steps.release_step(60, 0).ok()); });
  std::this_thread::sleep_for(700ms);
  EXPECT_EQ(steps.units.spares.ready(), 0u) << "none of the burst's made while a step's container is removed";
  EXPECT_EQ(steps.units.spares.making(), 2u) << "the burst's two wait";
  release.join();
  EXPECT_TRUE(within_10s([&] { return steps.units.spares.ready() == 2; })) << "made once the removal is over";

  ASSERT_TRUE(steps.create(step(61, 0, 1001)).ok());
  fake_.stop_delay = 5000ms;
  std::atomic<bool> removed{false};
  std::thread release_one([&] {
    EXPECT_TRUE(steps.release_step(61, 0).ok());
    removed = true;
  });
  EXPECT_TRUE(within_10s([&] { return steps.units.spares.ready() == 3; }));
  EXPECT_FALSE(removed) << "a single step's spare is made while its container is removed";
  release_one.join();
  fake_.stop_delay = 0ms;  // the spares' own removal at the end
}

}  // namespace
}  // namespace crisp_test
