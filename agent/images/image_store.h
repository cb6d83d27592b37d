// The node's images as crispd sees them: present ones are read from the store,
// missing ones are pulled through CRI, each pull on a thread of its own, and
// concurrent requests for one image wait on a single pull. A waiter may leave
// (its step was cancelled) while the pull goes on for the next; a pull with no
// byte arriving for the stall limit is cut and its ingests aborted.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "agent/cri/content_client.h"
#include "agent/cri/cri_client.h"
#include "agent/cri/spec_builder.h"
#include "agent/images/pull_error.h"
#include "agent/images/pull_progress.h"
#include "agent/images/pull_slots.h"
#include "agent/images/pull_waiter.h"
#include "agent/images/registry_auth.h"
#include "agent/metrics/metrics.h"

namespace crisp {

struct PullCounters {
  std::atomic<uint64_t> started{0};
  std::atomic<uint64_t> merged{0};
  std::atomic<uint64_t> cached{0};
  std::atomic<uint64_t> failed{0};
  std::atomic<uint64_t> stalled{0};
};

// How pulls are watched (crispd's flags).
struct PullWatch {
  ContentClient* content = nullptr;  // null: no progress and no stall limit
  std::chrono::seconds stall_limit{60};
  std::chrono::seconds progress_after{3};
  std::chrono::seconds progress_every{5};
  // 429 Too Many Requests: tries after the first, with these pauses between them.
  std::vector<std::chrono::seconds> rate_limit_pauses{std::chrono::seconds(2), std::chrono::seconds(8)};
  // Where each pull's end is counted: its time, bytes, and why it failed.
  std::shared_ptr<Metrics> metrics = std::make_shared<Metrics>();
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
                      std::string private_list = "", PullWatch watch = {});
  // Cuts the pulls under way and waits for their threads.
  ~ImageStore();
  ImageStore(const ImageStore&) = delete;
  ImageStore& operator=(const ImageStore&) = delete;

  // Credentials for a pull, looked up only when one is needed: reading a
  // user's files costs a process, and a malformed one fails only a pull.
  using CredentialSource = std::function<FoundCredential()>;

  // Makes the image present and returns its config. An image the policy
  // guards is used only once the registry accepts these credentials for it:
  // CRI pulls it again with them, which checks its manifest and downloads
  // nothing already present (as kubelet's "ensure secret pulled images").
  // An error of kind kCancelled when waiter.stop said to stop.
  Result<ImageConfig> ensure(const std::string& ref, const CredentialSource& credentials = {},
                             const PullWaiter& waiter = {});
  // Starts pulling the image unless it is present or being pulled, and returns at once
  // (the job prolog's): true when a pull is under way. A guarded present image is left
  // for its steps to check.
  Result<bool> prefetch(const std::string& ref, const CredentialSource& credentials, uint32_t uid);
  // Pulls under way at once: on the node, and started by one user (a cancelled step's goes on).
  static constexpr int kMaxPulls = 32;
  static constexpr int kMaxPullsPerUser = 4;
  bool is_private(const std::string& ref);
  // The config of an image a container already runs (a named one being
  // joined): its user was checked when it was made. Pulled again only if gone.
  Result<ImageConfig> config_of(const std::string& ref, const CredentialSource& credentials);
  const PullCounters& counters() const { return counters_; }

 private:
  // One CRI pull under way, on its own thread; its waiters hold it.
  struct Pull {
    std::mutex mu;
    std::condition_variable cv;
    bool call_over = false;       // under mu: CRI answered (the watcher stops)
    bool done = false;            // under mu: result is set, entry's pull reset
    Status result = Ok{};         // under mu, once done
    std::string line;             // the latest progress line; under mu
    bool stalled = false;         // under mu: the watcher cut it
    bool pausing = false;         // under mu: between tries after a 429 (no bytes expected)
    const char* failure = "other";  // why it failed, for the metrics (pull_retrying's)
    int64_t started_ns = 0;       // wall clock, as containerd stamps ingests
    std::optional<std::vector<Blob>> blobs;  // its manifest's, once the watcher found it; under mu
    CallCanceller canceller;
  };
  struct Entry {
    std::mutex mu;                // checks of the store, and `pull`
    std::shared_ptr<Pull> pull;   // the one under way, if any
  };
  std::shared_ptr<Entry> entry_for(const std::string& ref);
  // The image's config; nullopt: the node does not have it.
  Result<std::optional<ImageConfig>> read_config(const std::string& ref);
  // Call with entry.mu held: a new pull of ref, on a thread of its own, unless limits forbid.
  Result<std::shared_ptr<Pull>> start_pull(const std::string& ref, const std::optional<RegistryCredential>& auth,
                                           const std::shared_ptr<Entry>& entry, uint32_t uid);
  void run_pull(const std::string& ref, const std::optional<RegistryCredential>& auth,
                const std::shared_ptr<Entry>& entry, const std::shared_ptr<Pull>& pull, uint32_t uid);
  Result<std::string> pull_retrying(const std::string& ref, const std::optional<RegistryCredential>& auth, Pull& pull);
  // Samples the content store every second until the pull is done: its progress line, and the stall limit.
  void watch_pull(const std::string& ref, Pull& pull);
  // The bytes of the image's repository the store took in since the pull began.
  double fetched_bytes(const std::string& ref, const Pull& pull);
  // A failed pull's ingests go: nothing half-fetched is left.
  void abandon(const std::string& ref, Pull& pull);
  Status wait_for(Pull& pull, const PullWaiter& waiter);
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
  PullWatch watch_;
  PullSlots slots_{kMaxPulls, kMaxPullsPerUser};
};


}  // namespace crisp
