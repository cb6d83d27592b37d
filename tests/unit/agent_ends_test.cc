// The ends of steps and jobs against the fake CRI: StepEnds (a job's end removes its containers
// only, and after the steps being launched where no one waits for it), Containers::end_job_processes
// (holders ended before containerd removes them), StepWork's wait and JobLocks (a job's lock
// outlives its end while a thread waits on it; the table does not grow with the node's jobs).
#include <gtest/gtest.h>
#include <unistd.h>

#include <optional>

#include "tests/unit/fake_cri.h"

namespace crisp_test {
namespace {

TEST_F(AgentTest, ReleaseJobRemovesEverythingOfTheJobOnly) {
  ASSERT_TRUE(steps_->create(step(9, 0)).ok());
  ASSERT_TRUE(steps_->create(step(9, 1)).ok());
  ASSERT_TRUE(steps_->create(step(10, 0)).ok());
  auto r = steps_->release_job(9);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->removed_containers(), 2u);
  EXPECT_EQ(fake_.containers.size(), 1u);
  EXPECT_EQ(fake_.sandboxes.size(), 1u);
}

// The epilog's answer waits for no process of the job to be left, not for containerd's
// stop and removal; holders a restarted crispd did not start are stopped through the CRI.
TEST_F(AgentTest, AJobsEndEndsItsHoldersBeforeContainerdRemovesThem) {
  ASSERT_TRUE(steps_->create(step(20, 0)).ok());
  ASSERT_TRUE(steps_->create(step(20, 1)).ok());
  ASSERT_TRUE(steps_->create(step(21, 0)).ok());
  holders_ended = 0;
  ASSERT_TRUE(steps_->end_job_processes(20).ok());
  EXPECT_EQ(holders_ended, 2);
  {
    std::lock_guard l(fake_.mu);
    EXPECT_EQ(fake_.containers.size(), 3u);
    for (auto& [id, c] : fake_.containers) EXPECT_EQ(c.state(), cri::CONTAINER_RUNNING) << id;
  }
  ASSERT_TRUE(steps_->release_job(20).ok());
  EXPECT_EQ(fake_.containers.size(), 1u);

  Node restarted(*client_, *images_, settings());
  holders_ended = 0;
  ASSERT_TRUE(restarted.end_job_processes(21).ok());
  EXPECT_EQ(holders_ended, 0);
  std::lock_guard l(fake_.mu);
  ASSERT_EQ(fake_.containers.size(), 1u);
  EXPECT_EQ(fake_.containers.begin()->second.state(), cri::CONTAINER_EXITED);
}

// containerd may answer the stop of a container whose holder the job's end ended before it has
// noted the exit, and refuse the removal as running: the removal waits for the exit, then goes.
TEST_F(AgentTest, AJobsEndRemovesAContainerWhoseExitContainerdNotesLate) {
  ASSERT_TRUE(steps_->create(step(44, 0)).ok());
  ASSERT_TRUE(steps_->end_job_processes(44).ok());
  fake_.stops_before_exit_noted = 1;
  auto r = steps_->release_job(44);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->removed_containers(), 1u);
  std::lock_guard l(fake_.mu);
  EXPECT_TRUE(fake_.containers.empty());
  EXPECT_TRUE(fake_.exit_unnoted.empty());
}

// The sweep and a release may both set out to remove a container, from their own listing: the
// second finds it gone and neither fails nor counts it again.
TEST_F(AgentTest, AContainerRemovedMeanwhileIsNotRemovedTwice) {
  ASSERT_TRUE(steps_->create(step(46, 0)).ok());
  auto listed = steps_->units.containers.find(crisp::job_selector(46));
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(steps_->units.containers.remove(*listed).count, 1u);
  auto again = steps_->units.containers.remove(*listed);
  EXPECT_TRUE(again.status.ok()) << again.status.error();
  EXPECT_EQ(again.count, 0u) << "counted once only";
}

// Each holder's exit costs containerd's shim (one for a user's sandbox) a `runc kill --all` under
// its one lock: a burst of step ends hands containerd a few exits at a time, the client's 4 slots.
TEST_F(AgentTest, StepEndsHandContainerdAFewExitsAtATime) {
  ASSERT_EQ(create_at_once(30, 0, 12), 12);
  fake_.stop_delay = 200ms;
  holders_ended = exits_unnoted = most_exits_unnoted = 0;
  std::vector<std::thread> ends;
  std::atomic<int> released{0};
  for (uint32_t i = 0; i < 12; ++i)
    ends.emplace_back([&, i] {
      if (steps_->release_step(30, i).ok()) released++;
    });
  for (auto& t : ends) t.join();
  EXPECT_EQ(released, 12);
  EXPECT_EQ(holders_ended, 12);
  EXPECT_GE(most_exits_unnoted, 2) << "ends overlapped";
  EXPECT_LE(most_exits_unnoted, 4) << "no more holders dead than stops under way";
  std::lock_guard l(fake_.mu);
  EXPECT_TRUE(fake_.containers.empty());
}

// A removal its caller is answered before waits while a step's container is being made:
// the holder's exit and containerd's removal are runc's work, which a launch beside them
// would wait for on a small node. One its caller waits for does not wait.
TEST_F(AgentTest, AnAnsweredRemovalWaitsForTheStepsBeingLaunched) {
  ASSERT_TRUE(steps_->create(step(40, 0)).ok());
  ASSERT_TRUE(steps_->create(step(40, 1)).ok());
  fake_.create_delay = 3000ms;  // longer than the release its caller waits for, on a loaded machine too
  std::atomic<bool> created{false}, answered{false}, released{false};
  std::jthread launch([&] {
    EXPECT_TRUE(steps_->create(step(40, 2)).ok());
    created = true;
  });
  ASSERT_TRUE(within_10s([&] { return steps_->units.work.recent(crisp::StepWork::Work::kCreate); }));
  std::jthread end([&] {
    EXPECT_TRUE(steps_->units.ends.release_step(40, 0, [&] { answered = true; }).ok());
    released = true;
  });
  EXPECT_TRUE(within_10s([&] { return answered.load(); }));
  EXPECT_TRUE(steps_->release_step(40, 1).ok());
  EXPECT_FALSE(created) << "a release its caller waits for waits for no launch";
  EXPECT_FALSE(released) << "an answered release removed its container while a step was being launched";
  launch.join();
  EXPECT_TRUE(within_10s([&] { return released.load(); })) << "removed once the launch is over";
  end.join();
  fake_.create_delay = 0ms;
  std::lock_guard l(fake_.mu);
  EXPECT_EQ(fake_.containers.size(), 1u) << "step 2's alone";
}

// A step whose image is being pulled, for minutes maybe, is no launch yet: removals (and
// spares) do not wait for it.
TEST_F(AgentTest, AStepWaitingForItsImagesPullIsNoLaunch) {
  fake_.pull_delay = 4000ms;
  std::jthread launch([&] { EXPECT_TRUE(steps_->create(step(42, 0)).ok()); });
  ASSERT_TRUE(within_10s([&] { return fake_.pulls > 0; }));
  std::this_thread::sleep_for(300ms);  // the quiet time since the create began
  EXPECT_FALSE(steps_->units.work.recent(crisp::StepWork::Work::kCreate)) << "a pull counted as a launch";
  launch.join();
  fake_.pull_delay = 0ms;
}

// The wait is bounded: in time (launches that never pause), in waiters (each holds a thread)
// and by crispd's stop.
TEST(StepWorkTest, AWaitForQuietCreatesIsBounded) {
  crisp::StepWork work(200ms, 60s);
  EXPECT_TRUE(work.wait_for_quiet_creates(10ms, 1)) << "nothing made: no wait";
  std::optional<crisp::StepWork::Busy> create(std::in_place, work, crisp::StepWork::Work::kCreate);
  EXPECT_FALSE(work.wait_for_quiet_creates(50ms, 1)) << "gave up after its time";
  std::atomic<bool> first_done{false};
  std::jthread first([&] {
    EXPECT_TRUE(work.wait_for_quiet_creates(10000ms, 1));
    first_done = true;
  });
  ASSERT_TRUE(within_10s([&] { return work.waiting() == 1; }));
  EXPECT_FALSE(work.wait_for_quiet_creates(10000ms, 1)) << "one waits already: the second does not";
  EXPECT_FALSE(first_done);
  create.reset();
  first.join();
  EXPECT_FALSE(work.recent(crisp::StepWork::Work::kCreate));

  create.emplace(work, crisp::StepWork::Work::kCreate);
  std::jthread stopped([&] { EXPECT_FALSE(work.wait_for_quiet_creates(10000ms, 1)) << "crispd stopped"; });
  ASSERT_TRUE(within_10s([&] { return work.waiting() == 1; }));
  work.stop_waiting();
  stopped.join();
  EXPECT_TRUE(work.recent(crisp::StepWork::Work::kCreate)) << "it ended by the stop, not by the create";
}

// A create under way longer than `longest` (an entrypoint, a site hook, a lock waited for) no
// longer counts: one user's entrypoint of a minute must not hold up the node's spares and removals.
TEST(StepWorkTest, ALongCreateNoLongerCounts) {
  crisp::StepWork work(50ms, 2000ms);
  crisp::StepWork::Busy create(work, crisp::StepWork::Work::kCreate);
  EXPECT_TRUE(work.recent(crisp::StepWork::Work::kCreate));
  std::this_thread::sleep_for(2200ms);
  EXPECT_FALSE(work.recent(crisp::StepWork::Work::kCreate));
  crisp::StepWork::Busy next(work, crisp::StepWork::Work::kCreate);
  EXPECT_TRUE(work.recent(crisp::StepWork::Work::kCreate)) << "a new one counts";
}

// A step's removal that waited for launches removes only the containers it found before: a job
// requeued onto the node meanwhile has the same id, and its steps the same numbers.
TEST_F(AgentTest, AStepsRemovalAfterAWaitLeavesARequeuedJobsNewStep) {
  ASSERT_TRUE(steps_->create(step(43, 0)).ok());
  std::optional<crisp::StepWork::Busy> launching(std::in_place, steps_->units.work, crisp::StepWork::Work::kCreate);
  std::atomic<bool> answered{false};
  std::jthread end([&] { EXPECT_TRUE(steps_->units.ends.release_step(43, 0, [&] { answered = true; }).ok()); });
  ASSERT_TRUE(within_10s([&] { return steps_->units.work.waiting() == 1; }));
  EXPECT_TRUE(answered);
  ASSERT_TRUE(steps_->release_job(43).ok());  // the job's end, not deferred: the node's next job is to find it gone
  {
    std::lock_guard l(fake_.mu);
    EXPECT_TRUE(fake_.containers.empty());
  }
  ASSERT_TRUE(steps_->create(step(43, 0)).ok());  // the requeued run's step 0
  EXPECT_EQ(steps_->units.work.waiting(), 1) << "the first run's release still waits (else this tests nothing)";
  launching.reset();
  end.join();
  std::lock_guard l(fake_.mu);
  EXPECT_EQ(fake_.containers.size(), 1u) << "the requeued job's step 0 was removed by its first run's release";
}

// A job's end gives back what its containers held on the host (a tmpfs's memory) before its
// epilog is answered; their removal then waits for the steps being launched.
TEST_F(AgentTest, AJobsEndGivesBackItsTmpfsAtOnceAndRemovesAfterLaunches) {
  if (geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  auto req = step(45, 0);
  auto* m = req.add_mounts();
  m->set_tmpfs(true);
  m->set_target("/scratch");
  ASSERT_TRUE(steps_->create(req).ok());
  const std::string root = dir_ + "/tmpfs/45.0";
  ASSERT_EQ(access(root.c_str(), F_OK), 0);
  std::optional<crisp::StepWork::Busy> launching(std::in_place, steps_->units.work, crisp::StepWork::Work::kCreate);
  std::atomic<bool> answered{false};
  std::jthread end([&] { EXPECT_TRUE(steps_->units.ends.release_job(45, [&] { answered = true; }).ok()); });
  ASSERT_TRUE(within_10s([&] { return answered.load(); }));
  EXPECT_EQ(access(root.c_str(), F_OK), -1) << "the step's tmpfs is given back when the epilog is answered";
  ASSERT_TRUE(within_10s([&] { return steps_->units.work.waiting() == 1; }));
  {
    std::lock_guard l(fake_.mu);
    EXPECT_EQ(fake_.containers.size(), 1u) << "its removal waits for the launch";
  }
  launching.reset();
  end.join();
  std::lock_guard l(fake_.mu);
  EXPECT_TRUE(fake_.containers.empty());
}

// A node runs many jobs: their locks' entries do not pile up.
TEST_F(AgentTest, JobLocksDoNotPileUpWithTheNodesJobs) {
  for (uint32_t job = 1; job <= 1000; ++job) {
    auto whole = steps_->units.locks.lock_job(job);
    auto shared = steps_->units.locks.share_user(job);
  }
  EXPECT_LE(steps_->units.locks.entries(), 64u);
}

// A job's mutex leaves the table once no lock holds or waits on it, not while another
// thread waits on it at the job's end: that thread and a newcomer would each hold "the" job's lock.
TEST_F(AgentTest, AJobsLockOutlivesItsEndWhileAThreadWaitsOnIt) {
  // release_job(5) holds job 5's lock, parked in its listing of the job's containers.
  std::atomic<bool> listing{false}, release_may_go{false};
  fake_.on_list = [&] {
    listing = true;
    while (!release_may_go) std::this_thread::sleep_for(1ms);
  };
  std::thread release([&] { (void)steps_->release_job(5); });
  bool release_held = within_10s([&] { return listing.load(); });
  const pid_t newcomer = gettid();  // this thread, once the waiter holds the lock
  std::atomic<pid_t> waiter_tid{0};
  std::atomic<bool> waiter_held{false}, waiter_in{false}, newcomer_trying{false}, newcomer_in{false};
  std::thread waiter([&] {
    waiter_tid = gettid();
    auto l = steps_->units.locks.lock_job(5);
    waiter_held = waiter_in = true;
    // Kept until the newcomer waits on the same lock (or, wrongly, holds one of its own).
    within_10s([&] { return newcomer_in || (newcomer_trying && waits_on_a_lock(newcomer)); });
    waiter_in = false;
  });
  bool waiter_waited = within_10s([&] { return waiter_tid != 0 && waits_on_a_lock(waiter_tid); });
  release_may_go = true;
  release.join();  // job 5's lock is the waiter's now
  within_10s([&] { return waiter_held.load(); });
  bool overlap = false;
  newcomer_trying = true;  // from here it does nothing but take the lock (a join also waits in futex)
  {
    auto l = steps_->units.locks.lock_job(5);
    newcomer_in = true;
    overlap = waiter_in;
  }
  waiter.join();
  fake_.on_list = nullptr;
  EXPECT_TRUE(release_held) << "release_job(5) never listed the job's containers";
  EXPECT_TRUE(waiter_waited) << "the waiter was not seen waiting on job 5's lock while release_job held it";
  EXPECT_TRUE(waiter_held) << "the waiter never held job 5's lock";
  EXPECT_FALSE(overlap) << "a newcomer took job 5's lock while the waiter held it";
}

}  // namespace
}  // namespace crisp_test
