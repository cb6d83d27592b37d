// The node's images as crispd sees them: present ones are read from the store,
// missing ones are pulled through CRI, and concurrent requests for one image
// wait on a single pull.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "agent/cri/cri_client.h"
#include "agent/cri/spec_builder.h"
#include "agent/images/pull_error.h"
#include "agent/images/registry_auth.h"

namespace crisp {

struct PullCounters {
  std::atomic<uint64_t> started{0};
  std::atomic<uint64_t> merged{0};
  std::atomic<uint64_t> cached{0};
};

class ImageStore {
 public:
  explicit ImageStore(CriClient& cri) : cri_(cri) {}

  // Credentials for a pull, looked up only when one is needed: reading a
  // user's files costs a process, and a malformed one fails only a pull.
  using CredentialSource = std::function<FoundCredential()>;

  // Makes the image present and returns its config.
  Result<ImageConfig> ensure(const std::string& ref, const CredentialSource& credentials = {});
  const PullCounters& counters() const { return counters_; }

 private:
  struct Entry {
    std::mutex pulling;
    // Pulls finished: a request that sees this grow while it waits for
    // `pulling` was merged into a pull under way.
    std::atomic<uint64_t> completed{0};
  };
  std::shared_ptr<Entry> entry_for(const std::string& ref);
  Result<ImageConfig> read_config(const std::string& ref, bool& present);

  CriClient& cri_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;
  PullCounters counters_;
};


}  // namespace crisp
