// A thin synchronous wrapper over containerd's CRI (RuntimeService and
// ImageService): every call has a deadline and returns a one-line error.
// Calls that make runc work (a sandbox's run, stop and removal; a container's create, start
// and removal) are let through at most `parallel_tasks` at once: all of a sandbox's
// containers share one shim, and a flood of them starves containerd's 2 s task-state query,
// after which it builds a container against pid 0 ("namespace path: lstat /proc/0/ns/ipc").
// StopContainer takes none of those slots (it may wait out a step's grace period) but one
// of as many others: a container in the node's pid namespace, as crisp's are, costs its
// sandbox's shim a `runc kill --all` under the shim's one lock when its holder exits, and 32
// holders ending at once starved the same state query.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <semaphore>
#include <string>
#include <vector>

#include "agent/cri/cri_types.h"
#include "common/result.h"
#include "cri.grpc.pb.h"

namespace crisp {

// Lets another thread cut a call under way (a pull past the stall limit).
class CallCanceller {
 public:
  void cancel();
  bool cancelled();

 private:
  friend class CriClient;
  void attach(grpc::ClientContext* ctx);
  std::mutex mu_;
  grpc::ClientContext* ctx_ = nullptr;
  bool cancelled_ = false;
};

class CriClient {
 public:
  static constexpr int kMaxParallelTasks = 1024;
  CriClient(const std::string& endpoint, std::chrono::seconds call_timeout, std::chrono::seconds pull_timeout,
            int parallel_tasks);

  Result<std::string> version();
  // Status(verbose)'s info: containerd's CRI configuration under "config".
  Result<std::map<std::string, std::string>> status_info();
  Result<std::string> run_pod_sandbox(const cri::PodSandboxConfig& config, const std::string& runtime_handler);
  Status stop_pod_sandbox(const std::string& id);
  Status remove_pod_sandbox(const std::string& id);
  Result<std::vector<cri::PodSandbox>> list_pod_sandboxes(const Labels& selector);
  Result<std::string> create_container(const std::string& sandbox_id, const cri::ContainerConfig& config,
                                       const cri::PodSandboxConfig& sandbox_config);
  Status start_container(const std::string& id);
  // end_first (crispd's own end of the container's holder) runs in the same slot: the stop
  // returns once containerd has noted the exit, so the shim has that many exits at most to handle.
  Status stop_container(const std::string& id, int64_t timeout_s, const std::function<void()>& end_first = {});
  // containerd opens the container's log path anew (and closes the old file).
  Status reopen_container_log(const std::string& id);
  Status remove_container(const std::string& id);
  Result<std::vector<cri::Container>> list_containers(const Labels& selector, const std::string& sandbox_id = "");
  Result<cri::ContainerStatusResponse> container_status(const std::string& id, bool verbose);
  // An image that is not in the store is a value without `image`, not an error.
  Result<cri::ImageStatusResponse> image_status(const std::string& ref, bool verbose);
  // auth's server_address must stay empty: containerd drops credentials whose address has no scheme.
  // canceller (optional) may cut it from another thread: an error of kind kCancelled.
  Result<std::string> pull_image(const std::string& ref, const std::optional<cri::AuthConfig>& auth,
                                 CallCanceller* canceller = nullptr);
  // The connection to containerd, for its other services (content_client.h).
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }

  // Seconds since containerd last answered a call (an error of its own included; not an
  // unreachable socket nor a deadline passed); -1 before any answer.
  double seconds_since_answer() const;

 private:
  // Calls one unary RPC with a deadline.
  template <typename Stub, typename Req, typename Resp>
  Status invoke(Stub* stub, grpc::Status (Stub::*rpc)(grpc::ClientContext*, const Req&, Resp*), const char* name,
                const Req& req, Resp* resp, std::chrono::seconds timeout);
  // s, noting when containerd answered.
  Status answered(Status s);
  std::atomic<int64_t> last_answer_ns_{0};  // steady clock
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<cri::RuntimeService::Stub> runtime_;
  std::unique_ptr<cri::ImageService::Stub> images_;
  std::chrono::seconds call_timeout_;
  std::chrono::seconds pull_timeout_;
  std::counting_semaphore<kMaxParallelTasks> task_slots_;
  std::counting_semaphore<kMaxParallelTasks> stop_slots_;
};

}  // namespace crisp
