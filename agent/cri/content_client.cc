#include "agent/cri/content_client.h"

#include <grpcpp/grpcpp.h>

namespace crisp {
namespace content = containerd::services::content::v1;
namespace {

int64_t ns_of(const google::protobuf::Timestamp& t) { return t.seconds() * 1000000000 + t.nanos(); }

ContentInfo from_proto(const content::Info& i) {
  return {i.digest(), i.size(), {i.labels().begin(), i.labels().end()}, ns_of(i.created_at())};
}

Error error_of(const char* rpc, const grpc::Status& s) {
  ErrorKind kind = s.error_code() == grpc::StatusCode::UNAVAILABLE ? ErrorKind::kUnreachable : ErrorKind::kFailed;
  return fail(kind, std::string("content ") + rpc + ": " + s.error_message());
}

// Every call has a deadline and names containerd's namespace for CRI's objects.
void prepare(grpc::ClientContext& ctx, std::chrono::seconds timeout) {
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  ctx.AddMetadata("containerd-namespace", "k8s.io");
}

}  // namespace

ContentClient::ContentClient(std::shared_ptr<grpc::Channel> channel, std::chrono::seconds call_timeout)
    : stub_(content::Content::NewStub(channel)), call_timeout_(call_timeout) {}

Result<std::vector<Ingest>> ContentClient::ingests() {
  grpc::ClientContext ctx;
  prepare(ctx, call_timeout_);
  content::ListStatusesRequest req;
  content::ListStatusesResponse resp;
  if (auto s = stub_->ListStatuses(&ctx, req, &resp); !s.ok()) return error_of("ListStatuses", s);
  std::vector<Ingest> out;
  for (const auto& st : resp.statuses()) out.push_back({st.ref(), st.offset(), st.total(), ns_of(st.started_at())});
  return out;
}

Result<std::vector<ContentInfo>> ContentClient::with_label(const std::string& key, const std::string& value) {
  grpc::ClientContext ctx;
  prepare(ctx, call_timeout_);
  content::ListContentRequest req;
  req.add_filters("labels.\"" + key + "\"==\"" + value + "\"");
  auto reader = stub_->List(&ctx, req);
  content::ListContentResponse part;
  std::vector<ContentInfo> out;
  while (reader->Read(&part))
    for (const auto& i : part.info()) out.push_back(from_proto(i));
  if (auto s = reader->Finish(); !s.ok()) return error_of("List", s);
  return out;
}

Result<std::optional<ContentInfo>> ContentClient::info(const std::string& digest) {
  grpc::ClientContext ctx;
  prepare(ctx, call_timeout_);
  content::InfoRequest req;
  req.set_digest(digest);
  content::InfoResponse resp;
  grpc::Status s = stub_->Info(&ctx, req, &resp);
  if (s.error_code() == grpc::StatusCode::NOT_FOUND) return std::optional<ContentInfo>();
  if (!s.ok()) return error_of("Info", s);
  return std::optional<ContentInfo>(from_proto(resp.info()));
}

Result<std::string> ContentClient::read(const std::string& digest, int64_t max) {
  grpc::ClientContext ctx;
  prepare(ctx, call_timeout_);
  content::ReadContentRequest req;
  req.set_digest(digest);
  req.set_size(max);
  auto reader = stub_->Read(&ctx, req);
  content::ReadContentResponse part;
  std::string out;
  while (reader->Read(&part) && static_cast<int64_t>(out.size()) < max) out += part.data();
  if (auto s = reader->Finish(); !s.ok()) return error_of("Read", s);
  return out;
}

Status ContentClient::abort(const std::string& ref) {
  grpc::ClientContext ctx;
  prepare(ctx, call_timeout_);
  content::AbortRequest req;
  req.set_ref(ref);
  google::protobuf::Empty resp;
  grpc::Status s = stub_->Abort(&ctx, req, &resp);
  if (!s.ok() && s.error_code() != grpc::StatusCode::NOT_FOUND) return error_of("Abort", s);
  return Ok{};
}

}  // namespace crisp
