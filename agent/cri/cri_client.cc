#include "agent/cri/cri_client.h"

#include <grpcpp/grpcpp.h>

namespace crisp {
namespace {

// A call's error names the RPC and carries containerd's own message, which is
// what an admin needs to act.
Status grpc_status(const char* name, const grpc::Status& s, std::chrono::seconds timeout) {
  if (s.ok()) return Ok{};
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE)
    return fail(ErrorKind::kUnreachable, std::string("the container runtime is unreachable (") + name + ": " + s.error_message() + ")");
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
    return fail(ErrorKind::kTimedOut, std::string("the container runtime did not answer ") + name + " within " +
                std::to_string(timeout.count()) + " s");
  // A container or sandbox removed meanwhile (the sweep and a release both at it): gone already.
  if (s.error_code() == grpc::StatusCode::NOT_FOUND) return fail(ErrorKind::kNotFound, std::string(name) + ": " + s.error_message());
  return fail(std::string(name) + ": " + s.error_message());
}

// Holds one of the runtime's task slots for a call's duration.
class TaskSlot {
 public:
  explicit TaskSlot(std::counting_semaphore<CriClient::kMaxParallelTasks>& slots) : slots_(slots) { slots_.acquire(); }
  ~TaskSlot() { slots_.release(); }
  TaskSlot(const TaskSlot&) = delete;
  TaskSlot& operator=(const TaskSlot&) = delete;

 private:
  std::counting_semaphore<CriClient::kMaxParallelTasks>& slots_;
};

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

template <typename Stub, typename Req, typename Resp>
Status CriClient::invoke(Stub* stub, grpc::Status (Stub::*rpc)(grpc::ClientContext*, const Req&, Resp*), const char* name,
                         const Req& req, Resp* resp, std::chrono::seconds timeout) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  return answered(grpc_status(name, (stub->*rpc)(&ctx, req, resp), timeout));
}

Status CriClient::answered(Status s) {
  if (s || (s.error_kind() != ErrorKind::kUnreachable && s.error_kind() != ErrorKind::kTimedOut))
    last_answer_ns_ = steady_ns();
  return s;
}

double CriClient::seconds_since_answer() const {
  int64_t last = last_answer_ns_;
  return last ? static_cast<double>(steady_ns() - last) / 1e9 : -1;
}

CriClient::CriClient(const std::string& endpoint, std::chrono::seconds call_timeout, std::chrono::seconds pull_timeout,
                     int parallel_tasks)
    : call_timeout_(call_timeout), pull_timeout_(pull_timeout), task_slots_(parallel_tasks), stop_slots_(parallel_tasks) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(32 << 20);
  channel_ = grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), args);
  runtime_ = cri::RuntimeService::NewStub(channel_);
  images_ = cri::ImageService::NewStub(channel_);
}

Result<std::string> CriClient::version() {
  cri::VersionRequest req;
  req.set_version("v1");
  cri::VersionResponse resp;
  if (auto s = invoke(runtime_.get(), &cri::RuntimeService::Stub::Version, "Version", req, &resp, call_timeout_); !s)
    return s.take_error();
  return resp.runtime_name() + " " + resp.runtime_version() + " (CRI " + resp.runtime_api_version() + ")";
}

Result<std::map<std::string, std::string>> CriClient::status_info() {
  cri::StatusRequest req;
  req.set_verbose(true);
  cri::StatusResponse resp;
  if (auto s = invoke(runtime_.get(), &cri::RuntimeService::Stub::Status, "Status", req, &resp, call_timeout_); !s)
    return s.take_error();
  return std::map<std::string, std::string>(resp.info().begin(), resp.info().end());
}

Result<std::string> CriClient::run_pod_sandbox(const cri::PodSandboxConfig& config, const std::string& handler) {
  TaskSlot slot(task_slots_);
  cri::RunPodSandboxRequest req;
  *req.mutable_config() = config;
  req.set_runtime_handler(handler);
  cri::RunPodSandboxResponse resp;
  if (auto s = invoke(runtime_.get(), &cri::RuntimeService::Stub::RunPodSandbox, "RunPodSandbox", req, &resp,
                      call_timeout_);
      !s)
    return s.take_error();
  return resp.pod_sandbox_id();
}

Status CriClient::stop_pod_sandbox(const std::string& id) {
  TaskSlot slot(task_slots_);
  cri::StopPodSandboxRequest req;
  req.set_pod_sandbox_id(id);
  cri::StopPodSandboxResponse resp;
  return invoke(runtime_.get(), &cri::RuntimeService::Stub::StopPodSandbox, "StopPodSandbox", req, &resp,
                call_timeout_);
}

Status CriClient::remove_pod_sandbox(const std::string& id) {
  TaskSlot slot(task_slots_);
  cri::RemovePodSandboxRequest req;
  req.set_pod_sandbox_id(id);
  cri::RemovePodSandboxResponse resp;
  return invoke(runtime_.get(), &cri::RuntimeService::Stub::RemovePodSandbox, "RemovePodSandbox", req, &resp,
                call_timeout_);
}

Result<std::vector<cri::PodSandbox>> CriClient::list_pod_sandboxes(const Labels& selector) {
  cri::ListPodSandboxRequest req;
  req.mutable_filter()->mutable_label_selector()->insert(selector.begin(), selector.end());
  cri::ListPodSandboxResponse resp;
  if (auto s = invoke(runtime_.get(), &cri::RuntimeService::Stub::ListPodSandbox, "ListPodSandbox", req, &resp,
                      call_timeout_);
      !s)
    return s.take_error();
  return std::vector<cri::PodSandbox>(resp.items().begin(), resp.items().end());
}

Result<std::string> CriClient::create_container(const std::string& sandbox_id, const cri::ContainerConfig& config,
                                                const cri::PodSandboxConfig& sandbox_config) {
  TaskSlot slot(task_slots_);
  cri::CreateContainerRequest req;
  req.set_pod_sandbox_id(sandbox_id);
  *req.mutable_config() = config;
  *req.mutable_sandbox_config() = sandbox_config;
  cri::CreateContainerResponse resp;
  if (auto s = invoke(runtime_.get(), &cri::RuntimeService::Stub::CreateContainer, "CreateContainer", req, &resp,
                      call_timeout_);
      !s)
    return s.take_error();
  return resp.container_id();
}

Status CriClient::start_container(const std::string& id) {
  TaskSlot slot(task_slots_);
  cri::StartContainerRequest req;
  req.set_container_id(id);
  cri::StartContainerResponse resp;
  return invoke(runtime_.get(), &cri::RuntimeService::Stub::StartContainer, "StartContainer", req, &resp,
                call_timeout_);
}

Status CriClient::reopen_container_log(const std::string& id) {
  cri::ReopenContainerLogRequest req;
  req.set_container_id(id);
  cri::ReopenContainerLogResponse resp;
  return invoke(runtime_.get(), &cri::RuntimeService::Stub::ReopenContainerLog, "ReopenContainerLog", req, &resp,
                call_timeout_);
}

Status CriClient::stop_container(const std::string& id, int64_t timeout_s, const std::function<void()>& end_first) {
  TaskSlot slot(stop_slots_);
  if (end_first) end_first();
  cri::StopContainerRequest req;
  req.set_container_id(id);
  req.set_timeout(timeout_s);
  cri::StopContainerResponse resp;
  return invoke(runtime_.get(), &cri::RuntimeService::Stub::StopContainer, "StopContainer", req, &resp,
                call_timeout_ + std::chrono::seconds(timeout_s));
}

Status CriClient::remove_container(const std::string& id) {
  TaskSlot slot(task_slots_);
  cri::RemoveContainerRequest req;
  req.set_container_id(id);
  cri::RemoveContainerResponse resp;
  return invoke(runtime_.get(), &cri::RuntimeService::Stub::RemoveContainer, "RemoveContainer", req, &resp,
                call_timeout_);
}

Result<std::vector<cri::Container>> CriClient::list_containers(const Labels& selector, const std::string& sandbox_id) {
  cri::ListContainersRequest req;
  req.mutable_filter()->mutable_label_selector()->insert(selector.begin(), selector.end());
  req.mutable_filter()->set_pod_sandbox_id(sandbox_id);
  cri::ListContainersResponse resp;
  if (auto s = invoke(runtime_.get(), &cri::RuntimeService::Stub::ListContainers, "ListContainers", req, &resp,
                      call_timeout_);
      !s)
    return s.take_error();
  return std::vector<cri::Container>(resp.containers().begin(), resp.containers().end());
}

Result<cri::ContainerStatusResponse> CriClient::container_status(const std::string& id, bool verbose) {
  cri::ContainerStatusRequest req;
  req.set_container_id(id);
  req.set_verbose(verbose);
  cri::ContainerStatusResponse resp;
  if (auto s = invoke(runtime_.get(), &cri::RuntimeService::Stub::ContainerStatus, "ContainerStatus", req, &resp,
                      call_timeout_);
      !s)
    return s.take_error();
  return resp;
}

Result<cri::ImageStatusResponse> CriClient::image_status(const std::string& ref, bool verbose) {
  cri::ImageStatusRequest req;
  req.mutable_image()->set_image(ref);
  req.set_verbose(verbose);
  cri::ImageStatusResponse resp;
  if (auto s = invoke(images_.get(), &cri::ImageService::Stub::ImageStatus, "ImageStatus", req, &resp,
                      call_timeout_);
      !s)
    return s.take_error();
  return resp;
}

void CallCanceller::cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
  if (ctx_) ctx_->TryCancel();
}

bool CallCanceller::cancelled() {
  std::lock_guard lock(mu_);
  return cancelled_;
}

void CallCanceller::attach(grpc::ClientContext* ctx) {
  std::lock_guard lock(mu_);
  ctx_ = ctx;
  if (ctx && cancelled_) ctx->TryCancel();
}

Result<std::string> CriClient::pull_image(const std::string& ref, const std::optional<cri::AuthConfig>& auth,
                                          CallCanceller* canceller) {
  cri::PullImageRequest req;
  req.mutable_image()->set_image(ref);
  if (auth) *req.mutable_auth() = *auth;
  cri::PullImageResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + pull_timeout_);
  if (canceller) canceller->attach(&ctx);
  grpc::Status s = images_->PullImage(&ctx, req, &resp);
  if (canceller) canceller->attach(nullptr);
  if (s.error_code() == grpc::StatusCode::CANCELLED && canceller && canceller->cancelled())
    return fail(ErrorKind::kCancelled, "PullImage: cancelled");
  if (auto st = answered(grpc_status("PullImage", s, pull_timeout_)); !st) return st.take_error();
  return resp.image_ref();
}

}  // namespace crisp
