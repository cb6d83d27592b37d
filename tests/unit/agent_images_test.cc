// Image pulls and their credentials against the fake CRI: ImageStore (one pull for
// concurrent requests, a waiter that stops, private images) and ImageRequests (a step's
// pull waited for only while slurmctld runs the step).
#include <gtest/gtest.h>

#include <optional>
#include <thread>

#include "agent/images/image_store.h"
#include "tests/unit/fake_cri.h"

namespace crisp_test {
namespace {

TEST_F(AgentTest, ConcurrentRequestsForOneImageMakeOnePull) {
  fake_.pull_delay = 300ms;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      auto c = images_->ensure("127.0.0.1:5000/busybox:latest");
      if (c.ok() && c->env == std::vector<std::string>{"PATH=/img/bin"}) ok++;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 4);
  EXPECT_EQ(fake_.pulls, 1);
  EXPECT_EQ(images_->counters().started, 1u);
  EXPECT_EQ(images_->counters().merged, 3u);
  // Later requests find it in the store.
  ASSERT_TRUE(images_->ensure("127.0.0.1:5000/busybox:latest").ok());
  EXPECT_EQ(images_->counters().cached, 1u);
}

// A cancelled step stops waiting at once; the pull goes on and the next request finds the image.
TEST_F(AgentTest, AWaiterThatStopsLeavesThePullToFinish) {
  fake_.pull_delay = 3s;
  crisp::PullWaiter waiter;
  waiter.stop = [&]() -> std::optional<std::string> {
    return std::string("job 7 step 0 was cancelled while its image was pulled");
  };
  auto t0 = std::chrono::steady_clock::now();
  auto r = images_->ensure("127.0.0.1:5000/busybox:latest", {}, waiter);
  auto waited = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error_kind(), crisp::ErrorKind::kCancelled);
  EXPECT_EQ(r.error(), "job 7 step 0 was cancelled while its image was pulled");
  EXPECT_LT(waited, 2500ms) << "it did not wait for the pull";
  auto again = images_->ensure("127.0.0.1:5000/busybox:latest");
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(fake_.pulls, 1) << "the second request merged into the pull under way";
  EXPECT_EQ(images_->counters().merged, 1u);
}

// slurmctld's word that the step is over ends the wait, asked every few seconds only.
TEST_F(AgentTest, AStepCancelledWhileItsImageIsPulledFailsAtOnce) {
  fake_.pull_delay = 5s;
  auto s = settings();
  std::atomic<int> asked{0};
  s.seams.step_liveness = [&](uint32_t, uint32_t) {
    asked++;
    return crisp::JobLiveness::kOver;
  };
  Node steps(*client_, *images_, s);
  auto t0 = std::chrono::steady_clock::now();
  auto r = steps.create(step(31, 2));
  auto waited = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "job 31 step 2 was cancelled while its image was pulled");
  EXPECT_LT(waited, 4500ms);
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(fake_.containers.size(), 0u) << "nothing made";
}

TEST_F(AgentTest, MissingImageSaysSo) {
  fake_.pull_not_found = true;
  auto c = images_->ensure("127.0.0.1:5000/nope:latest");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error(), "image 127.0.0.1:5000/nope:latest was not found in its registry: check the name and tag");
}

// A user's registry credentials as found (null: none apply), counted in asked.
crisp::ImageStore::CredentialSource as(const char* user, int* asked = nullptr) {
  return [=]() -> crisp::FoundCredential {
    if (asked) ++*asked;
    if (!user) return std::optional<crisp::RegistryCredential>();
    return std::optional<crisp::RegistryCredential>(crisp::RegistryCredential{user, std::string(user) + "-pw"});
  };
}

TEST_F(AgentTest, PullSendsTheCredentialsGivenAndAsksOnlyWhenNeeded) {
  int asked = 0;
  ASSERT_TRUE(images_->ensure("127.0.0.1:5000/private:latest", as("alice", &asked)).ok());
  EXPECT_EQ(fake_.pull_user, "alice");
  EXPECT_EQ(fake_.pull_password, "alice-pw");
  ASSERT_TRUE(images_->ensure("127.0.0.1:5000/public:latest", as(nullptr, &asked)).ok());
  ASSERT_TRUE(images_->ensure("127.0.0.1:5000/public:latest", as(nullptr, &asked)).ok());
  EXPECT_EQ(asked, 2) << "a public image present needs no credentials";
  EXPECT_EQ(fake_.pull_user, "") << "anonymous when no credentials apply";
  auto broken = [] { return crisp::FoundCredential(crisp::fail("~/.docker/config.json: not valid JSON")); };
  auto r = images_->ensure("127.0.0.1:5000/other:latest", broken);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "~/.docker/config.json: not valid JSON") << "a file that cannot be read fails the pull it was for";
}

// An image pulled with one user's credentials is another's only once the
// registry accepts theirs: CRI pulls it again with them, downloading nothing.
TEST_F(AgentTest, APrivateImageIsUsedOnlyWithCredentialsTheRegistryAccepts) {
  const std::string img = "127.0.0.1:5002/crisp-test/private:latest", list = dir_ + "/private-images";
  crisp::ImageStore store(*client_, crisp::PrivateImagePolicy::kPrivate, list);
  ASSERT_TRUE(store.ensure(img, as("alice")).ok());
  EXPECT_EQ(fake_.pulls, 1);
  auto anonymous = store.ensure(img, as(nullptr));
  ASSERT_FALSE(anonymous.ok());
  EXPECT_EQ(anonymous.error(), "image " + img + " is private on this node (it was pulled with credentials): put yours "
                               "for its registry in ~/.config/enroot/.credentials (netrc) or ~/.docker/config.json");
  fake_.refuse_user = "mallory";
  auto refused = store.ensure(img, as("mallory"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("the registry 127.0.0.1:5002 refused access to image " + img), std::string::npos) << refused.error();
  ASSERT_TRUE(store.ensure(img, as("bob")).ok());
  EXPECT_EQ(fake_.pull_user, "bob") << "bob's credentials were checked by the registry";
  int pulls = fake_.pulls;
  ASSERT_TRUE(store.ensure(img, as("bob")).ok());
  ASSERT_TRUE(store.ensure(img, as("alice")).ok());
  EXPECT_EQ(fake_.pulls, pulls) << "a check holds for an hour";
  crisp::ImageStore restarted(*client_, crisp::PrivateImagePolicy::kPrivate, list);
  EXPECT_TRUE(restarted.is_private(img)) << "remembered across a restart";
  EXPECT_FALSE(restarted.ensure(img, as(nullptr)).ok());
  crisp::ImageStore shared(*client_, crisp::PrivateImagePolicy::kNever, list);
  EXPECT_TRUE(shared.ensure(img, as(nullptr)).ok()) << "--private-images=never: the node's images are anyone's";
}

}  // namespace
}  // namespace crisp_test
