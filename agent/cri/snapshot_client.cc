#include "agent/cri/snapshot_client.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <atomic>
#include <ctime>

#include "leases.grpc.pb.h"

namespace crisp {
namespace snapshots = containerd::services::snapshots::v1;
namespace leases = containerd::services::leases::v1;
namespace {

Error error_of(const char* rpc, const grpc::Status& s) {
  ErrorKind kind = s.error_code() == grpc::StatusCode::UNAVAILABLE ? ErrorKind::kUnreachable : ErrorKind::kFailed;
  return fail(kind, std::string("snapshots ") + rpc + ": " + s.error_message());
}

// Every call has a deadline and names containerd's namespace for CRI's objects;
// lease: the one the call's new objects belong to.
void prepare(grpc::ClientContext& ctx, std::chrono::seconds timeout, const std::string& lease = "") {
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  ctx.AddMetadata("containerd-namespace", "k8s.io");
  if (!lease.empty()) ctx.AddMetadata("containerd-lease", lease);
}

std::vector<SnapshotMount> from_proto(const google::protobuf::RepeatedPtrField<snapshots::Mount>& in) {
  std::vector<SnapshotMount> out;
  for (const auto& m : in) out.push_back({m.type(), m.source(), {m.options().begin(), m.options().end()}});
  return out;
}

// containerd's garbage collector drops an expired lease and what only it held (RFC 3339, UTC).
std::string expiry_after(std::chrono::seconds lifetime) {
  time_t at = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() + lifetime);
  struct tm tm {};
  char text[32];
  gmtime_r(&at, &tm);
  strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

class SnapshotClient::Leases {
 public:
  explicit Leases(const std::shared_ptr<grpc::Channel>& channel) : stub_(leases::Leases::NewStub(channel)) {}
  Status create(const std::string& id, std::chrono::seconds lifetime, std::chrono::seconds timeout) {
    grpc::ClientContext ctx;
    prepare(ctx, timeout);
    leases::CreateRequest req;
    req.set_id(id);
    (*req.mutable_labels())["containerd.io/gc.expire"] = expiry_after(lifetime);
    leases::CreateResponse resp;
    if (auto s = stub_->Create(&ctx, req, &resp); !s.ok()) return error_of("lease Create", s);
    return Ok{};
  }
  void remove(const std::string& id, std::chrono::seconds timeout) {
    grpc::ClientContext ctx;
    prepare(ctx, timeout);
    leases::DeleteRequest req;
    req.set_id(id);
    req.set_sync(true);
    google::protobuf::Empty resp;
    (void)stub_->Delete(&ctx, req, &resp);  // an expired lease goes by itself
  }

 private:
  std::unique_ptr<leases::Leases::Stub> stub_;
};

SnapshotClient::SnapshotClient(std::shared_ptr<grpc::Channel> channel, std::string snapshotter,
                               std::chrono::seconds call_timeout)
    : stub_(snapshots::Snapshots::NewStub(channel)),
      leases_(std::make_unique<Leases>(channel)),
      snapshotter_(std::move(snapshotter)),
      call_timeout_(call_timeout) {}

SnapshotClient::~SnapshotClient() = default;

Result<std::vector<SnapshotMount>> SnapshotClient::mounts(const std::string& key) {
  grpc::ClientContext ctx;
  prepare(ctx, call_timeout_);
  snapshots::MountsRequest req;
  req.set_snapshotter(snapshotter_);
  req.set_key(key);
  snapshots::MountsResponse resp;
  if (auto s = stub_->Mounts(&ctx, req, &resp); !s.ok()) return error_of("Mounts", s);
  return from_proto(resp.mounts());
}

Result<SnapshotView> SnapshotClient::view(const std::string& parent, std::chrono::seconds lifetime) {
  static std::atomic<uint64_t> serial{0};
  std::string key = "crisp-view-" + std::to_string(getpid()) + "-" + std::to_string(time(nullptr)) + "-" +
                    std::to_string(serial++);
  if (auto s = leases_->create(key, lifetime, call_timeout_); !s) return s.take_error();
  grpc::ClientContext ctx;
  prepare(ctx, call_timeout_, key);
  snapshots::ViewSnapshotRequest req;
  req.set_snapshotter(snapshotter_);
  req.set_key(key);
  req.set_parent(parent);
  snapshots::ViewSnapshotResponse resp;
  if (auto s = stub_->View(&ctx, req, &resp); !s.ok()) {
    leases_->remove(key, call_timeout_);
    return error_of("View", s);
  }
  return SnapshotView(this, key, from_proto(resp.mounts()));
}

void SnapshotClient::drop(const std::string& key) {
  grpc::ClientContext ctx;
  prepare(ctx, call_timeout_);
  snapshots::RemoveSnapshotRequest req;
  req.set_snapshotter(snapshotter_);
  req.set_key(key);
  google::protobuf::Empty resp;
  (void)stub_->Remove(&ctx, req, &resp);  // else the lease's end frees it
  leases_->remove(key, call_timeout_);
}

SnapshotView::SnapshotView(SnapshotView&& o) noexcept
    : client_(std::exchange(o.client_, nullptr)), key_(std::move(o.key_)), mounts_(std::move(o.mounts_)) {}

SnapshotView::~SnapshotView() {
  if (client_) client_->drop(key_);
}

}  // namespace crisp
