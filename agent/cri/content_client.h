// containerd's content store, read beside CRI: the ingests of pulls under way
// (their bytes, for progress and the stall limit) and the manifests pulls
// fetched; a failed pull's ingests are aborted through it. Same socket as CRI,
// namespace k8s.io.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "content.grpc.pb.h"

namespace crisp {

struct Ingest {
  std::string ref;  // kind-digest: "layer-sha256:…", "manifest-sha256:…", "config-sha256:…"
  int64_t offset = 0, total = 0;
  int64_t started_ns = 0;
};

struct ContentInfo {
  std::string digest;
  int64_t size = 0;
  std::map<std::string, std::string> labels;
  int64_t created_ns = 0;  // when it was committed to the store
};

class ContentClient {
 public:
  // channel: CRI's own (CriClient::channel), one connection to containerd.
  ContentClient(std::shared_ptr<grpc::Channel> channel, std::chrono::seconds call_timeout);
  Result<std::vector<Ingest>> ingests();
  // Blobs whose label key is value (containerd's filter syntax, quoted).
  Result<std::vector<ContentInfo>> with_label(const std::string& key, const std::string& value);
  // nullopt: not in the store.
  Result<std::optional<ContentInfo>> info(const std::string& digest);
  // A blob of at most max bytes (manifests).
  Result<std::string> read(const std::string& digest, int64_t max);
  Status abort(const std::string& ref);

 private:
  std::unique_ptr<containerd::services::content::v1::Content::Stub> stub_;
  std::chrono::seconds call_timeout_;
};

}  // namespace crisp
