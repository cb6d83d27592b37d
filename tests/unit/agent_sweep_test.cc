// The sweep against the fake CRI: exited containers and empty sandboxes, and running
// containers of jobs slurmctld says are over.
#include <gtest/gtest.h>

#include <vector>

#include "agent/cri/labels.h"
#include "tests/unit/fake_cri.h"

namespace crisp_test {
namespace {

// A create that finished after its job's epilog (a cancel during a cold pull)
// left a running container no release will ever name: the sweep removes it
// once slurmctld says the job is over, and never on doubt.
TEST_F(AgentTest, TheSweepRemovesRunningContainersOfJobsThatAreOver) {
  for (uint32_t job : {20u, 21u, 22u}) ASSERT_TRUE(steps_->create(step(job, 0)).ok());
  std::vector<uint32_t> asked;
  auto jobs = [&](uint32_t job) {
    asked.push_back(job);
    return job == 21 ? crisp::JobLiveness::kOver : job == 22 ? crisp::JobLiveness::kUnknown : crisp::JobLiveness::kAlive;
  };
  EXPECT_EQ(steps_->sweep(3600s, jobs), 1u);
  EXPECT_EQ(fake_.containers.size(), 2u) << "job 21's went; the live job's and the unknown one's stay";
  EXPECT_EQ(asked.size(), 3u) << "each job asked once";
  EXPECT_EQ(steps_->sweep(3600s), 0u) << "without slurmctld's word, running containers stay";
}

TEST_F(AgentTest, SweepRemovesExitedContainersAndEmptySandboxes) {
  ASSERT_TRUE(steps_->create(step(11, 0)).ok());
  ASSERT_TRUE(steps_->create(step(12, 0, 1001)).ok());
  {
    std::lock_guard l(fake_.mu);
    for (auto& [id, c] : fake_.containers)
      if (c.labels().at(crisp::labels::kJob) == "11") c.set_state(cri::CONTAINER_EXITED);
  }
  EXPECT_EQ(steps_->sweep(0s), 2u);  // job 11's container, then its user's empty sandbox
  EXPECT_EQ(fake_.containers.size(), 1u);
  EXPECT_EQ(fake_.sandboxes.size(), 1u);
}

}  // namespace
}  // namespace crisp_test
