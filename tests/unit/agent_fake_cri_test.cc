// crispd's managers against a fake CRI server, for the faults a real
// containerd will not produce on demand. The real path is in tests/integration.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "agent/cri/labels.h"
#include "agent/images/image_store.h"
#include "agent/node_units.h"
#include "agent/server.h"
#include "agent/sweeper.h"
#include "common/client.h"
#include "common/files.h"
#include "common/log.h"

using namespace std::chrono_literals;
namespace cri = runtime::v1;

namespace {

// A sample of crispd's metrics as collected for Prometheus: a counter's or gauge's value, a
// histogram's count; -1 when no series has exactly these labels.
double sample(const crisp::Metrics& metrics, const std::string& name, const std::map<std::string, std::string>& labels) {
  for (const auto& f : metrics.collect()) {
    if (f.name != name) continue;
    for (const auto& m : f.metric) {
      std::map<std::string, std::string> have;
      for (const auto& l : m.label) have[l.name] = l.value;
      if (have != labels) continue;
      if (f.type == prometheus::MetricType::Histogram) return static_cast<double>(m.histogram.sample_count);
      return f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  return -1;
}

// Whether pred comes true within 10 s (polled every millisecond).
template <class Pred>
bool within_10s(Pred pred) {
  for (auto end = std::chrono::steady_clock::now() + 10s; !pred(); std::this_thread::sleep_for(1ms))
    if (std::chrono::steady_clock::now() > end) return false;
  return true;
}

// Whether thread tid of this process sleeps in futex(2), that is, on a lock: the threads
// that a test watches so do nothing else that sleeps (a sleep_for is nanosleep).
bool waits_on_a_lock(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/syscall");
  long nr = -1;
  return f >> nr && nr == SYS_futex;
}

bool matches(const google::protobuf::Map<std::string, std::string>& labels,
             const google::protobuf::Map<std::string, std::string>& selector) {
  for (const auto& [k, v] : selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

class FakeCri final : public cri::RuntimeService::Service, public cri::ImageService::Service {
 public:
  std::mutex mu;
  std::map<std::string, cri::PodSandbox> sandboxes;
  std::map<std::string, cri::Container> containers;
  std::set<std::string> images;
  std::atomic<int> pulls{0};
  std::chrono::milliseconds pull_delay{0};
  std::chrono::milliseconds start_delay{0};
  // Called as a ListContainers begins, out of mu: a test parks a caller there. Set while no call is under way.
  std::function<void()> on_list;
  std::atomic<int> starting{0}, most_starting{0};
  bool fail_start = false;
  bool fail_create = false;
  std::string refuse_user;  // the registry refuses this user's credentials
  bool pull_not_found = false;
  int next = 0;

  grpc::Status RunPodSandbox(grpc::ServerContext*, const cri::RunPodSandboxRequest* req,
                             cri::RunPodSandboxResponse* resp) override {
    std::lock_guard l(mu);
    cri::PodSandbox sb;
    sb.set_id("sb" + std::to_string(next++));
    *sb.mutable_metadata() = req->config().metadata();
    *sb.mutable_labels() = req->config().labels();
    sb.set_state(cri::SANDBOX_READY);
    sb.set_created_at(std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count());
    sandboxes[sb.id()] = sb;
    resp->set_pod_sandbox_id(sb.id());
    return grpc::Status::OK;
  }
  grpc::Status StopPodSandbox(grpc::ServerContext*, const cri::StopPodSandboxRequest* req,
                              cri::StopPodSandboxResponse*) override {
    std::lock_guard l(mu);
    if (sandboxes.count(req->pod_sandbox_id())) sandboxes[req->pod_sandbox_id()].set_state(cri::SANDBOX_NOTREADY);
    return grpc::Status::OK;
  }
  grpc::Status RemovePodSandbox(grpc::ServerContext*, const cri::RemovePodSandboxRequest* req,
                                cri::RemovePodSandboxResponse*) override {
    std::lock_guard l(mu);
    sandboxes.erase(req->pod_sandbox_id());
    return grpc::Status::OK;
  }
  grpc::Status ListPodSandbox(grpc::ServerContext*, const cri::ListPodSandboxRequest* req,
                              cri::ListPodSandboxResponse* resp) override {
    std::lock_guard l(mu);
    for (const auto& [id, sb] : sandboxes)
      if (matches(sb.labels(), req->filter().label_selector())) *resp->add_items() = sb;
    return grpc::Status::OK;
  }
  grpc::Status CreateContainer(grpc::ServerContext*, const cri::CreateContainerRequest* req,
                               cri::CreateContainerResponse* resp) override {
    std::lock_guard l(mu);
    if (!sandboxes.count(req->pod_sandbox_id())) return {grpc::StatusCode::NOT_FOUND, "no such sandbox"};
    if (fail_create) return {grpc::StatusCode::UNKNOWN, "failed to create containerd container: no space left on device"};
    // As containerd: a container's name is reserved in its sandbox until it is removed.
    for (const auto& [id, other] : containers)
      if (other.pod_sandbox_id() == req->pod_sandbox_id() && other.metadata().name() == req->config().metadata().name())
        return {grpc::StatusCode::UNKNOWN, "failed to reserve container name " + req->config().metadata().name()};
    cri::Container c;
    *c.mutable_metadata() = req->config().metadata();
    c.set_id("c" + std::to_string(next++));
    c.set_pod_sandbox_id(req->pod_sandbox_id());
    *c.mutable_labels() = req->config().labels();
    c.set_state(cri::CONTAINER_CREATED);
    containers[c.id()] = c;
    resp->set_container_id(c.id());
    return grpc::Status::OK;
  }
  grpc::Status StartContainer(grpc::ServerContext*, const cri::StartContainerRequest* req,
                              cri::StartContainerResponse*) override {
    int now = ++starting;
    for (int m = most_starting; now > m && !most_starting.compare_exchange_weak(m, now);) {
    }
    std::this_thread::sleep_for(start_delay);
    --starting;
    std::lock_guard l(mu);
    if (fail_start) return {grpc::StatusCode::UNKNOWN, "runc: exec format error"};
    containers[req->container_id()].set_state(cri::CONTAINER_RUNNING);
    return grpc::Status::OK;
  }
  grpc::Status StopContainer(grpc::ServerContext*, const cri::StopContainerRequest* req,
                             cri::StopContainerResponse*) override {
    std::lock_guard l(mu);
    if (containers.count(req->container_id())) containers[req->container_id()].set_state(cri::CONTAINER_EXITED);
    return grpc::Status::OK;
  }
  grpc::Status RemoveContainer(grpc::ServerContext*, const cri::RemoveContainerRequest* req,
                               cri::RemoveContainerResponse*) override {
    std::lock_guard l(mu);
    containers.erase(req->container_id());
    return grpc::Status::OK;
  }
  grpc::Status ListContainers(grpc::ServerContext*, const cri::ListContainersRequest* req,
                              cri::ListContainersResponse* resp) override {
    if (on_list) on_list();
    std::lock_guard l(mu);
    for (const auto& [id, c] : containers)
      if (matches(c.labels(), req->filter().label_selector()) &&
          (req->filter().pod_sandbox_id().empty() || req->filter().pod_sandbox_id() == c.pod_sandbox_id()))
        *resp->add_containers() = c;
    return grpc::Status::OK;
  }
  grpc::Status ContainerStatus(grpc::ServerContext*, const cri::ContainerStatusRequest* req,
                               cri::ContainerStatusResponse* resp) override {
    std::lock_guard l(mu);
    if (!containers.count(req->container_id())) return {grpc::StatusCode::NOT_FOUND, "no such container"};
    (*resp->mutable_info())["info"] = "{\"pid\": " + std::to_string(getpid()) + "}";
    return grpc::Status::OK;
  }
  std::string pull_user, pull_password;
  grpc::Status ImageStatus(grpc::ServerContext*, const cri::ImageStatusRequest* req,
                           cri::ImageStatusResponse* resp) override {
    std::lock_guard l(mu);
    if (images.count(req->image().image())) {
      resp->mutable_image()->set_id("sha256:1");
      (*resp->mutable_info())["info"] = R"({"imageSpec":{"config":{"Env":["PATH=/img/bin"]}}})";
    }
    return grpc::Status::OK;
  }
  grpc::Status PullImage(grpc::ServerContext*, const cri::PullImageRequest* req,
                         cri::PullImageResponse* resp) override {
    pulls++;
    {
      std::lock_guard l(mu);
      pull_user = req->auth().username();
      pull_password = req->auth().password();
    }
    std::this_thread::sleep_for(pull_delay);
    if (!refuse_user.empty() && req->auth().username() == refuse_user)
      return {grpc::StatusCode::UNKNOWN, "pulling from host r failed with status code 401 Unauthorized: unauthorized"};
    if (pull_not_found)
      return {grpc::StatusCode::NOT_FOUND, "failed to resolve reference \"" + req->image().image() + "\": not found"};
    std::lock_guard l(mu);
    images.insert(req->image().image());
    resp->set_image_ref("sha256:1");
    return grpc::Status::OK;
  }
};

// A crispd's configuration and seams, as the tests set them.
struct NodeSetup {
  crisp::NodeConfig config;
  crisp::NodeSeams seams;
};

// One crispd's units against the fake, wired as crispd.cc wires them, with its own metrics.
struct Node {
  Node(crisp::CriClient& cri, crisp::ImageStore& store, NodeSetup s)
      : units(cri, store, metrics, std::move(s.config), std::move(s.seams)) {}
  crisp::Result<crisp::v1::CreateStepResponse> create(const crisp::v1::CreateStepRequest& req,
                                                      const crisp::PullWaiter& waiter = {}) {
    return units.creator.create(req, waiter);
  }
  crisp::Result<crisp::v1::ReleaseResponse> release_step(uint32_t job, uint32_t step) {
    return units.ends.release_step(job, step);
  }
  crisp::Result<crisp::v1::ReleaseResponse> release_job(uint32_t job) { return units.ends.release_job(job); }
  crisp::Status end_job_processes(uint32_t job) { return units.ends.end_job_processes(job); }
  crisp::Result<crisp::v1::ListResponse> list(uint32_t job, int64_t only_uid) { return units.containers.list(job, only_uid); }
  uint64_t sweep(std::chrono::seconds grace, const crisp::JobCheck& jobs = {}) {
    return crisp::sweep_once(units.sweep_parts(), grace, jobs);
  }

  crisp::Metrics metrics;
  crisp::NodeUnits units;
};

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    crisp::set_log_level(crisp::LogLevel::error);
    char tmpl[] = "/tmp/crisp-fake-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    endpoint_ = "unix://" + dir_ + "/cri.sock";
    grpc::ServerBuilder b;
    b.AddListeningPort(endpoint_, grpc::InsecureServerCredentials());
    b.RegisterService(static_cast<cri::RuntimeService::Service*>(&fake_));
    b.RegisterService(static_cast<cri::ImageService::Service*>(&fake_));
    server_ = b.BuildAndStart();
    ASSERT_TRUE(server_);
    client_ = std::make_unique<crisp::CriClient>(endpoint_, 5s, 30s, 4);
    images_ = std::make_unique<crisp::ImageStore>(*client_);
    auto s = settings();
    s.config.host.dirs = crisp::HostDirs(dir_ + "/tmpfs");
    steps_ = std::make_unique<Node>(*client_, *images_, s);
  }
  void TearDown() override {
    for (pid_t k : keepers) {
      kill(k, SIGKILL);
      waitpid(k, nullptr, 0);
    }
    keepers.clear();
    server_->Shutdown();
    (void)!system(("rm -rf " + dir_).c_str());
  }
  // The fake's containers report this test's pid, so the "holder" is this binary.
  static NodeSetup settings() {
    NodeSetup s;
    s.config.node = {"n1", "/bin/true"};
    s.config.stop_timeout_s = 0;
    char exe[4096] = {};
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    s.config.start.holder_exe = n > 0 ? std::string(exe, static_cast<size_t>(n)) : "";
    // The fake's "holder" is this test, not a container: the real thing is host_test's and the cluster's.
    // Nor may it be killed: the holders ended are counted instead.
    s.seams.end_process = [](int) { ++holders_ended; };
    // A step's keeper: a child that waits, killed at the test's end.
    s.seams.start_session = [](const crisp::SessionRequest& r) -> crisp::Result<crisp::SessionKeeper> {
      last_session = r;
      pid_t pid = fork();
      if (pid == 0) {
        pause();
        _exit(0);
      }
      keepers.push_back(pid);
      auto started = crisp::process_start_time(pid);
      if (!started) return started.take_error();
      auto fd = crisp::open_process(pid, *started);
      if (!fd) return fd.take_error();
      return crisp::SessionKeeper{pid, *started, std::move(*fd)};
    };
    s.seams.give_rootfs = [](const crisp::RootfsRequest& r) -> crisp::Status {
      if (r.user.uid == 0 && r.user.user.empty()) return crisp::fail("no user to give the files to");
      return crisp::Ok{};
    };
    return s;
  }
  crisp::v1::CreateStepRequest step(uint32_t job, uint32_t stepid, uint32_t uid = 1000) {
    crisp::v1::CreateStepRequest r;
    r.set_job_id(job);
    r.set_step_id(stepid);
    r.set_uid(uid);
    r.set_gid(uid);
    r.set_image("127.0.0.1:5000/busybox:latest");
    r.set_stepd_pid(getpid());
    return r;
  }

  // The sandbox the fake holds the step's container in.
  std::string sandbox_of(const crisp::v1::CreateStepResponse& r) {
    std::lock_guard l(fake_.mu);
    auto it = fake_.containers.find(r.container_id());
    return it == fake_.containers.end() ? "" : it->second.pod_sandbox_id();
  }

  static inline std::atomic<int> holders_ended{0};
  static inline std::vector<pid_t> keepers;
  static inline crisp::SessionRequest last_session;
  FakeCri fake_;
  std::string dir_, endpoint_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<crisp::CriClient> client_;
  std::unique_ptr<crisp::ImageStore> images_;
  std::unique_ptr<Node> steps_;
};

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

TEST_F(AgentTest, TheRootFilesystemGoesToTheStepsUserOrTheCreateIsUndone) {
  auto s = settings();
  std::vector<crisp::RootfsRequest> asked;
  s.seams.give_rootfs = [&](const crisp::RootfsRequest& r) -> crisp::Status {
    asked.push_back(r);
    if (r.user.uid == 1002) return crisp::fail("cannot give the container's files to its user: mounting the overlay: EINVAL");
    if (r.user.uid == 1003) return crisp::fail(crisp::ErrorKind::kUnsupported, "the container's root is btrfs");
    return crisp::Ok{};
  };
  Node steps(*client_, *images_, s);
  auto r = step(40, 0, 1001);
  r.set_readonly_rootfs(true);
  ASSERT_TRUE(steps.create(r).ok());
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].user.uid, 1001u);
  EXPECT_EQ(asked[0].user.gid, 1001u);
  EXPECT_TRUE(asked[0].readonly);
  EXPECT_GT(asked[0].pid, 0) << "the holder's";
  auto failed = steps.create(step(41, 0, 1002));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error(), "cannot give the container's files to its user: mounting the overlay: EINVAL");
  EXPECT_TRUE(steps.create(step(42, 0, 1003)).ok()) << "a node that cannot idmap runs steps in root's files, as before";
  std::lock_guard l(fake_.mu);
  for (const auto& [id, c] : fake_.containers)
    EXPECT_NE(c.labels().at(crisp::labels::kJob), "41") << "the failed step's container is removed";
}

TEST_F(AgentTest, MissingImageSaysSo) {
  fake_.pull_not_found = true;
  auto c = images_->ensure("127.0.0.1:5000/nope:latest");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error(), "image 127.0.0.1:5000/nope:latest was not found in its registry: check the name and tag");
}

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

TEST_F(AgentTest, ConcurrentStartsWaitForATaskSlotAndAllSucceed) {
  fake_.start_delay = 50ms;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (uint32_t i = 0; i < 12; ++i)
    threads.emplace_back([&, i] {
      if (steps_->create(step(7, i)).ok()) ok++;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 12);
  EXPECT_LE(fake_.most_starting, 4) << "the client was made with 4 task slots";
  EXPECT_GE(fake_.most_starting, 2) << "a job's steps still start side by side";
}

TEST_F(AgentTest, FailedStartLeavesNothingBehind) {
  fake_.fail_start = true;
  auto a = steps_->create(step(8, 0));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().find("cannot start the step's container"), std::string::npos) << a.error();
  EXPECT_NE(a.error().find("exec format error"), std::string::npos) << a.error();
  EXPECT_TRUE(fake_.containers.empty());
  ASSERT_TRUE(steps_->release_job(8).ok());  // the job's end, as the epilog sends it
  EXPECT_EQ(steps_->sweep(0s), 1u);  // the user's sandbox, idle
  EXPECT_TRUE(fake_.sandboxes.empty());
}

// What a create makes on the host before its container exists goes with a
// failure at any later phase: here a tmpfs and a staged clone of a user's
// source, with CreateContainer or StartContainer failing.
TEST_F(AgentTest, AFailedCreateLeavesNoHostMountBehind) {
  if (geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  for (bool at_create : {true, false}) {
    fake_.fail_create = at_create;
    fake_.fail_start = !at_create;
    auto req = step(11, at_create ? 0 : 1);
    auto* m = req.add_mounts();
    m->set_tmpfs(true);
    m->set_target("/scratch");
    auto* bind = req.add_mounts();
    bind->set_source("/tmp");
    bind->set_target("/data");
    auto r = steps_->create(req);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find(at_create ? "cannot create the step's container" : "cannot start the step's container"),
              std::string::npos)
        << r.error();
    EXPECT_TRUE(fake_.containers.empty());
    EXPECT_EQ(access((dir_ + "/tmpfs/11." + std::to_string(at_create ? 0 : 1)).c_str(), F_OK), -1)
        << "the step's tmpfs directory is gone";
    std::ifstream mounts("/proc/self/mounts");
    std::string all((std::istreambuf_iterator<char>(mounts)), std::istreambuf_iterator<char>());
    EXPECT_EQ(all.find(dir_ + "/tmpfs"), std::string::npos) << "and so is its mount";
  }
}

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
  fake_.pull_delay = crisp::kKeepaliveInterval + 2s;
  crisp::Server server(steps_->units.served());
  std::string sock = dir_ + "/crispd.sock";
  ASSERT_TRUE(server.listen_on(sock).ok());
  std::atomic<bool> stop{false};
  std::thread serving([&] { server.serve(stop); });
  crisp::v1::Request req;
  *req.mutable_create_step() = step(15, 0);
  // Silence allowed: less than the pull takes, more than the keepalive interval.
  auto r = crisp::call_agent(sock, req, 60s, crisp::kKeepaliveInterval + 1s);
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

namespace {

// A job's mutex leaves the map at the job's end, but not while another thread
// waits on it: that thread and a newcomer would each hold "the" job's lock.
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
  release.join();  // its end forgets job 5's lock, unless a thread waits on it
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

// SLURM_STEP_GPUS is in the job's environment: on Slurm 22.05 a step without
// GPUs keeps a value the user set. Only what slurmctld says the step has counts.
TEST_F(AgentTest, GpusNamedInTheEnvironmentNeedSlurmctldsWord) {
  auto with_gpus = [&](uint32_t stepid) {
    auto r = step(30, stepid);
    r.set_gpus("0-7");
    return r;
  };
  auto refused = steps_->create(with_gpus(0));
  ASSERT_FALSE(refused.ok()) << "no controller to ask: refused, not trusted";
  EXPECT_EQ(refused.error(), "crispd cannot confirm the step's GPUs: it has no Slurm controller to ask");
  auto s = settings();
  s.config.host.dirs = crisp::HostDirs(dir_ + "/tmpfs");
  std::vector<std::string> asked;
  s.seams.step_gpus = [&](uint32_t job, uint32_t stepid, const std::string& node) -> crisp::Result<crisp::StepGpus> {
    asked.push_back(std::to_string(job) + "." + std::to_string(stepid) + "@" + node);
    if (stepid == 2) return crisp::fail("Unable to contact slurm controller");
    return crisp::StepGpus{};  // the step holds no GPU
  };
  Node steps(*client_, *images_, s);
  auto none = steps.create(with_gpus(1));
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_EQ(none->device_env_size(), 0) << "no GPU, no CUDA_VISIBLE_DEVICES";
  auto down = steps.create(with_gpus(2));
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error(), "cannot confirm the step's GPUs with slurmctld (Unable to contact slurm controller): try again");
  EXPECT_EQ(asked, (std::vector<std::string>{"30.1@n1", "30.2@n1"}));
}

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
