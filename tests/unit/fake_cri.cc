#include "tests/unit/fake_cri.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "agent/cri/cri_client.h"
#include "agent/images/image_store.h"
#include "common/files.h"
#include "common/log.h"

namespace crisp_test {

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

bool waits_on_a_lock(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/syscall");
  long nr = -1;
  return f >> nr && nr == SYS_futex;
}

namespace {

bool matches(const google::protobuf::Map<std::string, std::string>& labels,
             const google::protobuf::Map<std::string, std::string>& selector) {
  for (const auto& [k, v] : selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

// One more under way in now, the most at once in most.
void busy_since(std::atomic<int>& now, std::atomic<int>& most) {
  int n = ++now;
  for (int m = most; n > m && !most.compare_exchange_weak(m, n);) {
  }
}

// A call under way for delay: counted in now, the most at once in most.
void busy(std::atomic<int>& now, std::atomic<int>& most, std::chrono::milliseconds delay) {
  busy_since(now, most);
  std::this_thread::sleep_for(delay);
  --now;
}

}  // namespace

class FakeCriService final : public cri::RuntimeService::Service, public cri::ImageService::Service {
 public:
  explicit FakeCriService(FakeCri& fake) : f(fake) {}

  grpc::Status RunPodSandbox(grpc::ServerContext*, const cri::RunPodSandboxRequest* req,
                             cri::RunPodSandboxResponse* resp) override {
    std::lock_guard l(f.mu);
    cri::PodSandbox sb;
    sb.set_id("sb" + std::to_string(f.next++));
    *sb.mutable_metadata() = req->config().metadata();
    *sb.mutable_labels() = req->config().labels();
    sb.set_state(cri::SANDBOX_READY);
    sb.set_created_at(std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count());
    f.sandboxes[sb.id()] = sb;
    resp->set_pod_sandbox_id(sb.id());
    return grpc::Status::OK;
  }
  grpc::Status StopPodSandbox(grpc::ServerContext*, const cri::StopPodSandboxRequest* req,
                              cri::StopPodSandboxResponse*) override {
    return stop(f.sandboxes, req->pod_sandbox_id(), cri::SANDBOX_NOTREADY);
  }
  grpc::Status RemovePodSandbox(grpc::ServerContext*, const cri::RemovePodSandboxRequest* req,
                                cri::RemovePodSandboxResponse*) override {
    return remove(f.sandboxes, req->pod_sandbox_id());
  }
  grpc::Status ListPodSandbox(grpc::ServerContext*, const cri::ListPodSandboxRequest* req,
                              cri::ListPodSandboxResponse* resp) override {
    f.sandbox_lists++;
    std::lock_guard l(f.mu);
    for (const auto& [id, sb] : f.sandboxes)
      if (matches(sb.labels(), req->filter().label_selector())) *resp->add_items() = sb;
    return grpc::Status::OK;
  }
  grpc::Status CreateContainer(grpc::ServerContext*, const cri::CreateContainerRequest* req,
                               cri::CreateContainerResponse* resp) override {
    busy(f.creating, f.most_creating, f.create_delay);
    std::lock_guard l(f.mu);
    if (!f.sandboxes.count(req->pod_sandbox_id())) return {grpc::StatusCode::NOT_FOUND, "no such sandbox"};
    if (f.fail_create) return {grpc::StatusCode::UNKNOWN, "failed to create containerd container: no space left on device"};
    // As containerd: a container's name is reserved in its sandbox until it is removed.
    for (const auto& [id, other] : f.containers)
      if (other.pod_sandbox_id() == req->pod_sandbox_id() && other.metadata().name() == req->config().metadata().name())
        return {grpc::StatusCode::UNKNOWN, "failed to reserve container name " + req->config().metadata().name()};
    cri::Container c;
    *c.mutable_metadata() = req->config().metadata();
    c.set_id("c" + std::to_string(f.next++));
    c.set_pod_sandbox_id(req->pod_sandbox_id());
    *c.mutable_labels() = req->config().labels();
    c.set_state(cri::CONTAINER_CREATED);
    f.containers[c.id()] = c;
    f.configs[c.id()] = req->config();
    resp->set_container_id(c.id());
    return grpc::Status::OK;
  }
  grpc::Status StartContainer(grpc::ServerContext*, const cri::StartContainerRequest* req,
                              cri::StartContainerResponse*) override {
    busy(f.starting, f.most_starting, f.start_delay);
    std::lock_guard l(f.mu);
    if (f.fail_start) return {grpc::StatusCode::UNKNOWN, "runc: exec format error"};
    f.containers[req->container_id()].set_state(cri::CONTAINER_RUNNING);
    return grpc::Status::OK;
  }
  grpc::Status StopContainer(grpc::ServerContext*, const cri::StopContainerRequest* req,
                             cri::StopContainerResponse*) override {
    std::this_thread::sleep_for(f.stop_delay);
    for (int n = exits_unnoted; n > 0 && !exits_unnoted.compare_exchange_weak(n, n - 1);) {
    }
    {
      std::lock_guard l(f.mu);  // as containerd's: a container removed meanwhile is not found
      if (!f.containers.count(req->container_id()))
        return {grpc::StatusCode::NOT_FOUND, "an error occurred when try to find container: not found"};
    }
    if (f.stops_before_exit_noted > 0) {
      f.stops_before_exit_noted--;
      std::lock_guard l(f.mu);
      f.exit_unnoted.insert(req->container_id());
      return grpc::Status::OK;
    }
    return stop(f.containers, req->container_id(), cri::CONTAINER_EXITED);
  }
  grpc::Status RemoveContainer(grpc::ServerContext*, const cri::RemoveContainerRequest* req,
                               cri::RemoveContainerResponse*) override {
    {
      std::lock_guard l(f.mu);
      if (f.exit_unnoted.count(req->container_id()))
        return {grpc::StatusCode::UNKNOWN, "failed to set removing state for container: container is still running, to stop first"};
    }
    return remove(f.containers, req->container_id());
  }
  grpc::Status ListContainers(grpc::ServerContext*, const cri::ListContainersRequest* req,
                              cri::ListContainersResponse* resp) override {
    f.container_lists++;
    if (f.on_list) f.on_list();
    std::lock_guard l(f.mu);
    for (const auto& [id, c] : f.containers)
      if (matches(c.labels(), req->filter().label_selector()) &&
          (req->filter().pod_sandbox_id().empty() || req->filter().pod_sandbox_id() == c.pod_sandbox_id()))
        *resp->add_containers() = c;
    return grpc::Status::OK;
  }
  grpc::Status ContainerStatus(grpc::ServerContext*, const cri::ContainerStatusRequest* req,
                               cri::ContainerStatusResponse* resp) override {
    std::lock_guard l(f.mu);
    auto it = f.containers.find(req->container_id());
    if (it == f.containers.end()) return {grpc::StatusCode::NOT_FOUND, "no such container"};
    (*resp->mutable_info())["info"] = "{\"pid\": " + std::to_string(getpid()) + "}";
    resp->mutable_status()->set_state(it->second.state());
    if (f.exit_unnoted.erase(req->container_id())) it->second.set_state(cri::CONTAINER_EXITED);  // noted now
    return grpc::Status::OK;
  }
  grpc::Status ImageStatus(grpc::ServerContext*, const cri::ImageStatusRequest* req,
                           cri::ImageStatusResponse* resp) override {
    std::lock_guard l(f.mu);
    if (f.images.count(req->image().image())) {
      resp->mutable_image()->set_id("sha256:1");
      (*resp->mutable_info())["info"] = R"({"imageSpec":{"config":{"Env":["PATH=/img/bin"]}}})";
    }
    return grpc::Status::OK;
  }
  grpc::Status PullImage(grpc::ServerContext*, const cri::PullImageRequest* req,
                         cri::PullImageResponse* resp) override {
    f.pulls++;
    {
      std::lock_guard l(f.mu);
      f.pull_user = req->auth().username();
      f.pull_password = req->auth().password();
    }
    std::this_thread::sleep_for(f.pull_delay);
    if (!f.refuse_user.empty() && req->auth().username() == f.refuse_user)
      return {grpc::StatusCode::UNKNOWN, "pulling from host r failed with status code 401 Unauthorized: unauthorized"};
    if (f.pull_not_found)
      return {grpc::StatusCode::NOT_FOUND, "failed to resolve reference \"" + req->image().image() + "\": not found"};
    std::lock_guard l(f.mu);
    f.images.insert(req->image().image());
    resp->set_image_ref("sha256:1");
    return grpc::Status::OK;
  }

 private:
  // A sandbox's or container's stop: the one id names, if held, is in state stopped.
  template <class Item, class State>
  grpc::Status stop(std::map<std::string, Item>& held, const std::string& id, State stopped) {
    std::lock_guard l(f.mu);
    if (auto it = held.find(id); it != held.end()) it->second.set_state(stopped);
    return grpc::Status::OK;
  }
  template <class Item>
  grpc::Status remove(std::map<std::string, Item>& held, const std::string& id) {
    std::lock_guard l(f.mu);
    held.erase(id);
    return grpc::Status::OK;
  }

  FakeCri& f;
};

AgentTest::AgentTest() = default;
AgentTest::~AgentTest() = default;

void AgentTest::SetUp() {
  crisp::set_log_level(crisp::LogLevel::error);
  char tmpl[] = "/tmp/crisp-fake-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  dir_ = tmpl;
  endpoint_ = "unix://" + dir_ + "/cri.sock";
  service_ = std::make_unique<FakeCriService>(fake_);
  grpc::ServerBuilder b;
  b.AddListeningPort(endpoint_, grpc::InsecureServerCredentials());
  b.RegisterService(static_cast<cri::RuntimeService::Service*>(service_.get()));
  b.RegisterService(static_cast<cri::ImageService::Service*>(service_.get()));
  server_ = b.BuildAndStart();
  ASSERT_TRUE(server_);
  client_ = std::make_unique<crisp::CriClient>(endpoint_, 5s, 30s, 4);
  images_ = std::make_unique<crisp::ImageStore>(*client_);
  auto s = settings();
  s.config.host.dirs = crisp::HostDirs(dir_ + "/tmpfs");
  steps_ = std::make_unique<Node>(*client_, *images_, s);
}

void AgentTest::TearDown() {
  for (pid_t k : keepers) {
    kill(k, SIGKILL);
    waitpid(k, nullptr, 0);
  }
  keepers.clear();
  server_->Shutdown();
  (void)!system(("rm -rf " + dir_).c_str());
}

NodeSetup AgentTest::settings() {
  NodeSetup s;
  s.config.node = {"n1", "/bin/true"};
  s.config.stop_timeout_s = 0;
  char exe[4096] = {};
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  s.config.start.holder_exe = n > 0 ? std::string(exe, static_cast<size_t>(n)) : "";
  // The fake's "holder" is this test, not a container: the real thing is host_test's and the cluster's.
  // Nor may it be killed: the holders ended are counted instead.
  s.seams.end_process = [](int) {
    ++holders_ended;
    busy_since(exits_unnoted, most_exits_unnoted);
  };
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

crisp::v1::CreateStepRequest AgentTest::step(uint32_t job, uint32_t stepid, uint32_t uid) {
  crisp::v1::CreateStepRequest r;
  r.set_job_id(job);
  r.set_step_id(stepid);
  r.set_uid(uid);
  r.set_gid(uid);
  r.set_image("127.0.0.1:5000/busybox:latest");
  r.set_stepd_pid(getpid());
  return r;
}

int AgentTest::create_at_once(uint32_t job, uint32_t first, uint32_t n) {
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (uint32_t i = first; i < first + n; ++i)
    threads.emplace_back([&, i] {
      if (steps_->create(step(job, i)).ok()) ok++;
    });
  for (auto& t : threads) t.join();
  return ok;
}

std::string AgentTest::sandbox_of(const crisp::v1::CreateStepResponse& r) {
  std::lock_guard l(fake_.mu);
  auto it = fake_.containers.find(r.container_id());
  return it == fake_.containers.end() ? "" : it->second.pod_sandbox_id();
}

}  // namespace crisp_test
