// The node's images as crispd sees them: present ones are read from the store,
// missing ones are pulled through CRI, and concurrent requests for one image
// wait on a single pull.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
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

// Who may use an image already on the node (crispd --private-images).
enum class PrivateImagePolicy {
  kNever,    // anyone: the node's images are shared
  kPrivate,  // an image first pulled with credentials, only a user whose credentials the registry accepts for it
  kAlways,   // every image, only after the registry accepts the user's credentials (or none) for it
};

class ImageStore {
 public:
  // private_list: the file that remembers, across restarts, which images were
  // pulled with credentials (empty: memory only).
  explicit ImageStore(CriClient& cri, PrivateImagePolicy policy = PrivateImagePolicy::kPrivate,
                      std::string private_list = "");

  // Credentials for a pull, looked up only when one is needed: reading a
  // user's files costs a process, and a malformed one fails only a pull.
  using CredentialSource = std::function<FoundCredential()>;

  // Makes the image present and returns its config. An image the policy
  // guards is used only once the registry accepts these credentials for it:
  // CRI pulls it again with them, which checks its manifest and downloads
  // nothing already present (as kubelet's "ensure secret pulled images").
  Result<ImageConfig> ensure(const std::string& ref, const CredentialSource& credentials = {});
  bool is_private(const std::string& ref);
  // The config of an image a container already runs (a named one being
  // joined): its user was checked when it was made. Pulled again only if gone.
  Result<ImageConfig> config_of(const std::string& ref, const CredentialSource& credentials);
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
  Result<std::string> pull(const std::string& ref, const std::optional<RegistryCredential>& auth);
  // Call with the image's entry locked: the registry accepts these credentials for it (checks cached an hour).
  Status recheck(const std::string& ref, const CredentialSource& credentials);
  void mark_private(const std::string& ref);

  CriClient& cri_;
  PrivateImagePolicy policy_;
  std::string private_list_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;
  std::set<std::string> private_;                                      // under mu_
  std::map<std::string, std::chrono::steady_clock::time_point> checked_;  // image and credential -> when; under mu_
  PullCounters counters_;
};


}  // namespace crisp
