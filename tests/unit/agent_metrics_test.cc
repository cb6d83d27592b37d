// crispd's metrics against the fake CRI: failures by phase, refusals and the sweep's removals.
#include <gtest/gtest.h>

#include "tests/unit/fake_cri.h"

namespace crisp_test {
namespace {

TEST_F(AgentTest, MetricsCountFailuresByPhaseRefusalsAndSweeps) {
  const crisp::Metrics& m = steps_->metrics;
  fake_.fail_start = true;
  ASSERT_FALSE(steps_->create(step(60, 0)).ok());
  fake_.fail_start = false;
  fake_.pull_not_found = true;
  auto missing = step(61, 0);
  missing.set_image("127.0.0.1:5000/nope:latest");
  ASSERT_FALSE(steps_->create(missing).ok());
  EXPECT_EQ(sample(m, "crisp_setup_failures_total", {{"phase", "start"}}), 1);
  EXPECT_EQ(sample(m, "crisp_setup_failures_total", {{"phase", "image"}}), 1);
  EXPECT_EQ(sample(m, "crisp_setup_failures_total", {{"phase", "create"}}), 0);
  EXPECT_EQ(sample(m, "crisp_setup_seconds", {{"kind", "new"}}), 0);

  crisp::Server server(steps_->units.served());
  crisp::v1::Request create;
  *create.mutable_create_step() = step(62, 0);
  EXPECT_FALSE(server.handle(create, {1, 1000, 1000}).error().empty());
  EXPECT_FALSE(server.handle(crisp::v1::Request(), {1, 1000, 1000}).error().empty());
  EXPECT_EQ(sample(m, "crisp_requests_refused_total", {{"reason", "not_root"}}), 1);
  EXPECT_EQ(sample(m, "crisp_requests_refused_total", {{"reason", "bad_input"}}), 1);

  fake_.pull_not_found = false;
  ASSERT_TRUE(steps_->create(step(63, 0)).ok());
  EXPECT_EQ(sample(m, "crisp_setup_seconds", {{"kind", "new"}}), 1);
  {
    std::lock_guard l(fake_.mu);
    for (auto& [id, c] : fake_.containers) c.set_state(cri::CONTAINER_EXITED);
  }
  ASSERT_EQ(steps_->sweep(0s), 2u);  // the container, then the user's empty sandbox
  EXPECT_EQ(sample(m, "crisp_sweep_removals_total", {{"cause", "exited"}}), 1);
  EXPECT_EQ(sample(m, "crisp_sweep_removals_total", {{"cause", "idle_sandbox"}}), 1);
  EXPECT_EQ(sample(m, "crisp_containers", {{"kind", "step"}}), 0);
  EXPECT_EQ(sample(m, "crisp_sandboxes", {}), 0);
}

}  // namespace
}  // namespace crisp_test
