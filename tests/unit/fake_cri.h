// What the tests of crispd's units against a fake CRI server share: the fake (FakeCri, what
// containerd holds and how it is to fail; its gRPC services are in fake_cri.cc), a Node (one
// crispd's units wired against it, as crispd.cc wires them) and the fixture AgentTest that
// serves the fake on a socket of its own. The faults are those a real containerd will not
// produce on demand; the real path is in tests/integration.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/cri/cri_types.h"
#include "agent/metrics/metrics.h"
#include "agent/node_units.h"
#include "agent/sweeper.h"

namespace grpc {
class Server;
}

namespace cri = runtime::v1;

namespace crisp_test {

using namespace std::chrono_literals;

// A sample of crispd's metrics as collected for Prometheus: a counter's or gauge's value, a
// histogram's count; -1 when no series has exactly these labels.
double sample(const crisp::Metrics& metrics, const std::string& name, const std::map<std::string, std::string>& labels);

// Whether pred comes true within 10 s (polled every millisecond).
template <class Pred>
bool within_10s(Pred pred) {
  for (auto end = std::chrono::steady_clock::now() + 10s; !pred(); std::this_thread::sleep_for(1ms))
    if (std::chrono::steady_clock::now() > end) return false;
  return true;
}

// Whether thread tid of this process sleeps in futex(2), that is, on a lock: the threads
// that a test watches so do nothing else that sleeps (a sleep_for is nanosleep).
bool waits_on_a_lock(pid_t tid);

// Holders ended whose exit no StopContainer has noted yet (containerd's shim handles each), the most at once.
inline std::atomic<int> exits_unnoted{0}, most_exits_unnoted{0};

// What the fake containerd holds, how it is to fail, and what it was asked. As containerd, it
// refuses a container in a sandbox it does not hold, and a container's name while another
// container of its sandbox has it.
class FakeCri {
 public:
  std::mutex mu;
  std::map<std::string, cri::PodSandbox> sandboxes;
  std::map<std::string, cri::Container> containers;
  std::map<std::string, cri::ContainerConfig> configs;  // each container's, as created
  std::set<std::string> images;
  std::atomic<int> pulls{0};
  std::atomic<int> sandbox_lists{0}, container_lists{0};  // ListPodSandbox, ListContainers calls
  std::chrono::milliseconds pull_delay{0};
  std::chrono::milliseconds start_delay{0};
  // Called as a ListContainers begins, out of mu: a test parks a caller there. Set while no call is under way.
  std::function<void()> on_list;
  std::atomic<int> starting{0}, most_starting{0};
  std::chrono::milliseconds create_delay{0};
  std::atomic<int> creating{0}, most_creating{0};
  std::chrono::milliseconds stop_delay{0};
  // As containerd's for a container whose holder ended before the stop: the next N stops
  // return before the exit is noted; the container stays running (RemoveContainer refuses
  // it) until its status has been asked once more.
  std::atomic<int> stops_before_exit_noted{0};
  std::set<std::string> exit_unnoted;  // under mu
  bool fail_start = false;
  bool fail_create = false;
  std::string refuse_user;  // the registry refuses this user's credentials
  bool pull_not_found = false;
  int next = 0;
  std::string pull_user, pull_password;
};

// The gRPC services that answer from a FakeCri (fake_cri.cc).
class FakeCriService;

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

// The fake served on a socket in a directory of the test's own, a CRI client of 4 task slots
// and an image store on it, and steps_, a Node with settings() and its host files in dir_/tmpfs.
class AgentTest : public ::testing::Test {
 protected:
  AgentTest();
  ~AgentTest() override;
  void SetUp() override;
  void TearDown() override;
  // The fake's containers report this test's pid, so the "holder" is this binary.
  static NodeSetup settings();
  crisp::v1::CreateStepRequest step(uint32_t job, uint32_t stepid, uint32_t uid = 1000);
  // Steps first..first+n-1 of job created at once, each on a thread of its own; how many succeeded.
  int create_at_once(uint32_t job, uint32_t first, uint32_t n);
  // The sandbox the fake holds the step's container in.
  std::string sandbox_of(const crisp::v1::CreateStepResponse& r);

  static inline std::atomic<int> holders_ended{0};
  static inline std::vector<pid_t> keepers;
  static inline crisp::SessionRequest last_session;
  FakeCri fake_;
  std::string dir_, endpoint_;
  std::unique_ptr<FakeCriService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<crisp::CriClient> client_;
  std::unique_ptr<crisp::ImageStore> images_;
  std::unique_ptr<Node> steps_;
};

}  // namespace crisp_test
