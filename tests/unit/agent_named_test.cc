// NamedContainers and StepSessions against the fake CRI: a named container outlives its step
// and is joined by the next, a global name outlives the job, steps join a running step's
// namespaces (its keeper's) or a running unnamed step by JOBID.STEPID.
#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/unit/fake_cri.h"

namespace crisp_test {
namespace {

TEST_F(AgentTest, NamedContainerOutlivesItsStepAndIsJoinedByTheNext) {
  auto named = [&](uint32_t stepid, crisp::v1::NameMode mode, bool with_image = true) {
    auto r = step(11, stepid);
    r.set_name("dev");
    r.set_name_mode(mode);
    if (!with_image) r.clear_image();
    return steps_->create(r);
  };
  auto first = named(0, crisp::v1::NAME_AUTO);
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_FALSE(first->attached());
  auto rel = steps_->release_step(11, 0);
  ASSERT_TRUE(rel.ok());
  EXPECT_EQ(rel->removed_containers(), 0u) << "a named container stays after its step";
  auto exec = named(1, crisp::v1::NAME_EXEC, false);
  ASSERT_FALSE(exec.ok()) << ":exec attaches to a running step only";
  EXPECT_EQ(exec.error(), "no step of the container named dev is running on this node: --container-name=dev:exec only "
                          "attaches to a running one");
  auto second = named(1, crisp::v1::NAME_AUTO, false);
  ASSERT_TRUE(second.ok()) << second.error();
  EXPECT_TRUE(second->attached());
  EXPECT_FALSE(second->running());
  EXPECT_EQ(second->container_id(), first->container_id());
  auto create = named(2, crisp::v1::NAME_CREATE);
  ASSERT_FALSE(create.ok());
  EXPECT_EQ(create.error(), "a container named dev already exists on this node (--container-name=dev:create makes a new one only)");
  auto other_user = step(11, 3, 1001);
  other_user.set_name("dev");
  other_user.set_name_mode(crisp::v1::NAME_EXEC);
  auto denied = steps_->create(other_user);
  ASSERT_FALSE(denied.ok()) << "one user never joins another's container";
  EXPECT_NE(denied.error().find("there is no container named dev"), std::string::npos);
  ASSERT_TRUE(steps_->release_job(11).ok());
  EXPECT_TRUE(fake_.containers.empty());
  auto gone = named(4, crisp::v1::NAME_EXEC, false);
  ASSERT_FALSE(gone.ok());
}

TEST_F(AgentTest, GlobalScopeKeepsTheNamedContainerAcrossJobs) {
  auto r = step(12, 0);
  r.set_name("keep");
  r.set_global_scope(true);
  auto a = steps_->create(r);
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(steps_->release_job(12).ok());
  ASSERT_EQ(fake_.containers.size(), 1u) << "the job's end leaves the user's container";
  auto next = step(13, 0);
  next.set_name("keep");
  next.set_global_scope(true);
  auto b = steps_->create(next);
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_TRUE(b->attached());
  EXPECT_EQ(b->container_id(), a->container_id());
}

// Pyxis's attach: a step that needs its own namespaces gets a keeper; steps naming the
// container while it runs join that step's, :no_exec never does, and a namespace the
// running step lacks cannot be asked for.
TEST_F(AgentTest, StepsAttachToARunningStepsNamespaces) {
  auto named = [&](uint32_t stepid, crisp::v1::NameMode mode) {
    auto r = step(14, stepid);
    r.set_name("ns");
    r.set_name_mode(mode);
    return r;
  };
  auto r = named(0, crisp::v1::NAME_AUTO);
  r.set_remap_root(true);
  r.set_unshare(crisp::kUnshareIpc);
  auto first = steps_->create(r);
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_NE(first->session_pid(), 0);
  EXPECT_TRUE(first->session_userns());
  EXPECT_EQ(first->unshare(), crisp::kUnshareIpc);
  EXPECT_FALSE(first->running());
  EXPECT_EQ(last_session.uid, 1000u);
  EXPECT_EQ(last_session.stepd_pid, getpid());

  auto join = named(1, crisp::v1::NAME_EXEC);
  join.clear_image();
  auto joined = steps_->create(join);
  ASSERT_TRUE(joined.ok()) << joined.error();
  EXPECT_TRUE(joined->running());
  EXPECT_EQ(joined->session_pid(), first->session_pid());
  EXPECT_TRUE(joined->session_userns()) << "the running step's user namespace, as Pyxis enters it";
  EXPECT_EQ(joined->unshare(), crisp::kUnshareIpc);

  auto ask = named(2, crisp::v1::NAME_AUTO);
  ask.set_unshare(crisp::kUnshareNet);
  auto refused = steps_->create(ask);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(), "--container-unshare=net requested but the container is not in a separate network namespace");

  auto fresh = steps_->create(named(3, crisp::v1::NAME_NO_EXEC));
  ASSERT_TRUE(fresh.ok()) << fresh.error();
  EXPECT_FALSE(fresh->running());
  EXPECT_EQ(fresh->session_pid(), 0) << "nothing asked of it needs a keeper";

  holders_ended = 0;
  ASSERT_TRUE(steps_->release_step(14, 0).ok());
  EXPECT_EQ(holders_ended, 1) << "the step's keeper goes with it";
  ASSERT_TRUE(steps_->release_step(14, 1).ok());
  ASSERT_TRUE(steps_->release_step(14, 3).ok());
  EXPECT_EQ(holders_ended, 1) << "steps attached to it own no keeper";
  auto none = steps_->create(named(4, crisp::v1::NAME_EXEC));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().find("no step of the container named ns is running"), std::string::npos);
}

// JOBID.STEPID names a running unnamed step's container, to its own user alone.
TEST_F(AgentTest, ARunningUnnamedStepIsJoinedByItsIds) {
  auto a = steps_->create(step(15, 2));
  ASSERT_TRUE(a.ok()) << a.error();
  auto r = step(16, 0);
  r.set_name("15.2");
  r.clear_image();
  auto joined = steps_->create(r);
  ASSERT_TRUE(joined.ok()) << joined.error();
  EXPECT_EQ(joined->container_id(), a->container_id());
  EXPECT_TRUE(joined->running());
  auto other = step(16, 1, 1001);
  other.set_name("15.2");
  other.clear_image();
  EXPECT_FALSE(steps_->create(other).ok()) << "another user's step";
  ASSERT_TRUE(steps_->release_step(16, 0).ok());
  EXPECT_EQ(fake_.containers.count(a->container_id()), 1u) << "the joiner's end leaves the step's container";
  ASSERT_TRUE(steps_->release_step(15, 2).ok());
  r.set_step_id(2);
  EXPECT_FALSE(steps_->create(r).ok()) << "once its step is over";
}

}  // namespace
}  // namespace crisp_test
