// Spare containers' pure parts: what a claim adds to a spare, which spares a
// node keeps, and the claim records a restarted crispd reads back.
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "agent/cri/labels.h"
#include "agent/cri/spec_builder.h"
#include "agent/spares/claim_plan.h"
#include "agent/spares/claims.h"
#include "agent/spares/spare_pool.h"

namespace {

crisp::NodeSettings node{"node7", "/usr/libexec/crisp/crisp-holder"};

crisp::StepContainerInput spare() {
  crisp::StepContainerInput in;
  in.job = {0, 1000, "alice"};
  in.gid = 100;
  in.image = "127.0.0.1:5000/busybox:latest";
  in.spare = "1";
  return in;
}

// A job's step of the same user and image, with its own mounts and devices.
crisp::StepContainerInput job() {
  crisp::StepContainerInput in = spare();
  in.spare.clear();
  in.job.job_id = 42;
  in.step_id = 3;
  in.stepd_pid = 999;
  in.groups = {100, 27};
  crisp::v1::BindMount m;
  m.set_source("/run/crisp/mounts/42.3/m0");
  m.set_target("/data");
  m.set_readonly(true);
  in.mounts.push_back(m);
  in.workdir = "/home/alice/run";
  in.workdir_source = "/run/crisp/mounts/42.3/m1";
  in.tmpfs.emplace_back("/run/crisp/mounts/42.3/t0", "/scratch");
  crisp::cri::Device d;
  d.set_host_path("/dev/infiniband/uverbs0");
  d.set_container_path("/dev/infiniband/uverbs0");
  d.set_permissions("rw");
  in.devices.push_back(d);
  return in;
}

std::vector<std::string> targets(const crisp::ClaimPlan& p) {
  std::vector<std::string> out;
  for (const auto& m : p.mounts) out.push_back(m.container_path() + (m.readonly() ? ":ro" : ""));
  return out;
}

}  // namespace

TEST(ClaimPlan, AddsExactlyTheJobsMountsAndDevicesInOrder) {
  auto plan = crisp::plan_claim(crisp::build_step_container(job(), node), crisp::build_step_container(spare(), node));
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ(targets(*plan), (std::vector<std::string>{"/data:ro", "/scratch", "/home/alice/run"}))
      << "the holder and /dev/pts are the spare's already";
  ASSERT_EQ(plan->devices.size(), 1u);
  EXPECT_EQ(plan->devices[0].container_path(), "/dev/infiniband/uverbs0");
}

TEST(ClaimPlan, ASpareOfAnotherUserImageOrRootIsNeverClaimed) {
  auto spare_config = crisp::build_step_container(spare(), node);
  crisp::StepContainerInput other = job();
  other.job.uid = 1001;
  EXPECT_FALSE(crisp::plan_claim(crisp::build_step_container(other, node), spare_config).ok()) << "another user";
  other = job();
  other.gid = 101;
  EXPECT_FALSE(crisp::plan_claim(crisp::build_step_container(other, node), spare_config).ok()) << "another group";
  other = job();
  other.image = "127.0.0.1:5000/busybox:other";
  EXPECT_FALSE(crisp::plan_claim(crisp::build_step_container(other, node), spare_config).ok()) << "another image";
  other = job();
  other.readonly_rootfs = true;
  auto ro = crisp::plan_claim(crisp::build_step_container(other, node), spare_config);
  ASSERT_FALSE(ro.ok());
  EXPECT_EQ(ro.error_kind(), crisp::ErrorKind::kUnsupported);
}

TEST(ClaimPlan, AnEntrypointEnvironmentOrSharedMountNeedsItsOwnContainer) {
  auto spare_config = crisp::build_step_container(spare(), node);
  crisp::StepContainerInput other = job();
  other.entrypoint = {"/entry.sh"};
  EXPECT_FALSE(crisp::plan_claim(crisp::build_step_container(other, node), spare_config).ok()) << "an entrypoint";
  other = job();
  other.env = {"A=1"};
  EXPECT_FALSE(crisp::plan_claim(crisp::build_step_container(other, node), spare_config).ok()) << "an environment";
  other = job();
  other.log_path = "42.3.log";
  EXPECT_FALSE(crisp::plan_claim(crisp::build_step_container(other, node), spare_config).ok()) << "a log";
  other = job();
  other.mounts[0].set_propagation("rslave");
  EXPECT_FALSE(crisp::plan_claim(crisp::build_step_container(other, node), spare_config).ok()) << "an rslave mount";
}

TEST(SparePool, OneSparePerKeyUsedStepAfterStepWithinTheNodesAndTheUsersLimits) {
  crisp::SparePool pool({3, 2, std::chrono::seconds(60)});
  crisp::SpareKey a{1000, 100, "img:a"}, b{1000, 100, "img:b"}, c{1000, 100, "img:c"}, d{1001, 100, "img:a"},
      e{1002, 100, "img:a"};
  EXPECT_TRUE(pool.note_use(a, 0).make);
  EXPECT_FALSE(pool.note_use(a, 1).make) << "already being made";
  EXPECT_TRUE(pool.note_use(b, 2).make);
  auto at_limit = pool.note_use(c, 3);
  EXPECT_TRUE(at_limit.make == 0 && at_limit.evicted.empty()) << "the user's limit, and both of theirs still being made";
  EXPECT_TRUE(pool.note_use(d, 4).make);
  EXPECT_FALSE(pool.note_use(e, 5).make) << "the node's limit";
  EXPECT_TRUE(pool.made(a, {"c1", "sha-a"}));
  pool.unmade(b);
  EXPECT_EQ(pool.ready(), 1u);
  EXPECT_FALSE(pool.take(b)) << "none made";
  EXPECT_FALSE(pool.take({1001, 100, "img:b"}));
  auto got = pool.take(a);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->id, "c1");
  EXPECT_FALSE(pool.take(a)) << "a spare is claimed once";
  EXPECT_TRUE(pool.holds("c1")) << "taken, it is still the pool's until removed";
  pool.drop("c1");
  EXPECT_FALSE(pool.holds("c1"));
  EXPECT_FALSE(pool.take(d)) << "another user's key never gets a's";
}

// A burst (steps of one key made at the same time) is the key's demand: that many are kept
// ready for the next burst, within the user's limit; claimed oldest first; rm --spares forgets it.
TEST(SparePool, AsManySparesAsTheKeysStepsOnceMadeAtOnce) {
  crisp::SparePool pool({16, 4, std::chrono::seconds(60)});
  crisp::SpareKey a{1000, 100, "img:a"}, b{1000, 100, "img:b"};
  {
    std::vector<std::unique_ptr<crisp::SparePool::Arrival>> burst;
    for (int i = 0; i < 6; ++i) burst.push_back(std::make_unique<crisp::SparePool::Arrival>(pool, a));
    EXPECT_EQ(pool.demand(a), 6u);
    EXPECT_EQ(pool.note_use(a, 1).make, 4u) << "the user's limit of 4";
    EXPECT_EQ(pool.note_use(a, 2).make, 0u) << "being made";
    EXPECT_EQ(pool.making(), 4u);
  }
  EXPECT_EQ(pool.demand(a), 6u) << "kept after the burst";
  for (const char* id : {"s1", "s2", "s3"}) ASSERT_TRUE(pool.made(a, {id, "sha"}));
  pool.unmade(a);
  EXPECT_EQ(pool.ready(), 3u);
  EXPECT_EQ(pool.making(), 0u) << "three made, one failed";
  EXPECT_EQ(pool.take(a)->id, "s1") << "the oldest first";
  EXPECT_EQ(pool.note_use(a, 3).make, 2u) << "back up to the user's limit: 2 ready and 2 more";
  auto use = pool.note_use(b, 4);
  EXPECT_EQ(use.make, 1u) << "b's one, at the user's limit in place of a ready one of a (least recently used)";
  ASSERT_EQ(use.evicted.size(), 1u);
  EXPECT_EQ(use.evicted[0].id, "s3");
  ASSERT_TRUE(pool.made(a, {"s4", "sha"}));
  auto gone = pool.take_all(1000u);
  EXPECT_EQ(gone.size(), 2u) << "a's ready ones";
  EXPECT_EQ(pool.demand(a), 1u) << "rm --spares forgets the demand";
  EXPECT_EQ(pool.note_use(a, 6).make, 1u) << "one refused is not counted as coming: one more is made";
  EXPECT_FALSE(pool.made(a, {"s5", "sha"})) << "one being made when removed: refused";
  EXPECT_TRUE(pool.made(a, {"s6", "sha"}));
}

// Slurm launches a burst's steps one after another, each claim taking milliseconds: steps
// without a pause of 200 ms between them are one burst, and its size is the demand (counting
// only those set up at the same time, a burst of 32 kept 24 spares). Steps with pauses are not.
TEST(SparePool, StepsWithoutAPauseBetweenThemAreOneBurst) {
  crisp::SparePool pool({16, 8, std::chrono::seconds(60)});
  crisp::SpareKey a{1000, 100, "img:a"}, b{1000, 100, "img:b"};
  for (int i = 0; i < 5; ++i) crisp::SparePool::Arrival one(pool, a);
  EXPECT_EQ(pool.demand(a), 5u);
  for (int i = 0; i < 3; ++i) {
    { crisp::SparePool::Arrival one(pool, b); }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  EXPECT_EQ(pool.demand(b), 1u) << "steps with pauses between them";
}

TEST(SparePool, AtTheLimitTheLeastRecentlyUsedGivesWay) {
  crisp::SparePool pool({3, 2, std::chrono::seconds(600)});
  crisp::SpareKey a{1000, 100, "img:a"}, b{1000, 100, "img:b"}, c{1000, 100, "img:c"}, d{1001, 100, "img:d"},
      e{1002, 100, "img:e"};
  ASSERT_TRUE(pool.note_use(a, 10).make);
  ASSERT_TRUE(pool.made(a, {"ca", "sha"}));
  ASSERT_TRUE(pool.note_use(b, 20).make);
  ASSERT_TRUE(pool.made(b, {"cb", "sha"}));
  auto use = pool.note_use(c, 30);
  EXPECT_TRUE(use.make) << "the user's newest image gets one";
  ASSERT_EQ(use.evicted.size(), 1u);
  EXPECT_EQ(use.evicted[0].id, "ca") << "in place of their least recently used";
  ASSERT_TRUE(pool.made(c, {"cc", "sha"}));
  use = pool.note_use(d, 40);
  EXPECT_TRUE(use.make);
  EXPECT_TRUE(use.evicted.empty()) << "the node has room";
  ASSERT_TRUE(pool.made(d, {"cd", "sha"}));
  use = pool.note_use(e, 50);
  EXPECT_TRUE(use.make);
  ASSERT_EQ(use.evicted.size(), 1u);
  EXPECT_EQ(use.evicted[0].id, "cb") << "the node's least recently used, whoever's";
}

TEST(SparePool, UnusedKeysExpireAfterTheGrace) {
  const int64_t s = 1'000'000'000;
  crisp::SparePool pool({8, 2, std::chrono::seconds(60)});
  crisp::SpareKey a{1000, 100, "img:a"}, b{1000, 100, "img:b"};
  ASSERT_TRUE(pool.note_use(a, 0).make);
  pool.made(a, {"c1", "sha"});
  ASSERT_TRUE(pool.note_use(b, 30 * s).make);
  pool.made(b, {"c2", "sha"});
  EXPECT_TRUE(pool.expired(59 * s).empty());
  auto gone = pool.expired(61 * s);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].id, "c1");
  EXPECT_TRUE(pool.holds("c2"));
  EXPECT_FALSE(pool.holds("c1"));
  pool.drop("c2");
  EXPECT_EQ(pool.ready(), 0u);
  EXPECT_FALSE(crisp::SparePool({0, 2, std::chrono::seconds(60)}).note_use(a, 0).make) << "--spares 0: none";
}

TEST(SparePool, RemovingAUsersSparesRefusesTheOneBeingMade) {
  crisp::SparePool pool({8, 2, std::chrono::seconds(60)});
  crisp::SpareKey a{1000, 100, "img:a"}, b{1000, 100, "img:b"}, c{1001, 100, "img:a"};
  ASSERT_TRUE(pool.note_use(a, 0).make);
  ASSERT_TRUE(pool.made(a, {"c1", "sha"}));
  ASSERT_TRUE(pool.note_use(b, 0).make);  // being made
  ASSERT_TRUE(pool.note_use(c, 0).make);
  ASSERT_TRUE(pool.made(c, {"c3", "sha"}));
  EXPECT_EQ(pool.making(), 1u);
  auto gone = pool.take_all(1000u);
  EXPECT_EQ(pool.making(), 0u) << "the one being made is refused: none will be ready";
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].id, "c1");
  EXPECT_FALSE(pool.made(b, {"c2", "sha"})) << "made after its user's spares were removed: refused";
  EXPECT_FALSE(pool.holds("c2"));
  EXPECT_TRUE(pool.holds("c3")) << "another user's stays";
  EXPECT_TRUE(pool.note_use(b, 1).make) << "and the next use makes one again";
  EXPECT_TRUE(pool.made(b, {"c4", "sha"}));
}

TEST(Claims, RecordsReadBackAndOverlaidOnlyOnClaimedSpares) {
  crisp::Claim c{42, 3, 999, 12345, "/run/crisp/mounts/42.3", ""};
  auto back = crisp::parse_claim(crisp::format_claim(c));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->job, 42u);
  EXPECT_EQ(back->step, 3u);
  EXPECT_EQ(back->stepd_pid, 999);
  EXPECT_EQ(back->stepd_start, 12345u);
  EXPECT_EQ(back->tmpfs_root, "/run/crisp/mounts/42.3");
  for (const char* bad : {"", "job=x\n", "job=0\nstep=0\nstepd=0\nstepd_start=0\ntmpfs=\nhca=\n", "evil\n",
                          "job=1\nstep=2\nstepd=3\nstepd_start=4\ntmpfs=\nhca=\nmore=1\n"})
    EXPECT_FALSE(crisp::parse_claim(bad)) << bad;

  crisp::ClaimBook book("");
  ASSERT_TRUE(book.record("abc123", c).ok());
  EXPECT_FALSE(book.record("../etc", c).ok()) << "a container id names no path";
  crisp::cri::Container spare, other;
  spare.set_id("abc123");
  (*spare.mutable_labels())[crisp::labels::kSpare] = "true";
  other.set_id("abc123");  // not labelled a spare: its own labels stand
  EXPECT_TRUE(book.overlay(spare));
  EXPECT_EQ(crisp::labels::value_of(spare.labels(), crisp::labels::kJob), "42");
  EXPECT_EQ(crisp::labels::value_of(spare.labels(), crisp::labels::kStep), "3");
  EXPECT_EQ(crisp::labels::value_of(spare.labels(), crisp::labels::kTmpfs), "/run/crisp/mounts/42.3");
  EXPECT_FALSE(book.overlay(other));
  book.forget("abc123");
  EXPECT_FALSE(book.any());
}
