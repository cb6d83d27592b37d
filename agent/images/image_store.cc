#include "agent/images/image_store.h"

#include <cerrno>
#include <cstdio>
#include <functional>

#include <deque>
#include <thread>

#include "common/files.h"
#include "common/image_ref.h"
#include "common/log.h"
#include "common/strings.h"

namespace crisp {
namespace {

constexpr std::chrono::hours kCheckValid{1};

int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::optional<cri::AuthConfig> cri_auth(const std::optional<RegistryCredential>& auth) {
  if (!auth) return std::nullopt;
  cri::AuthConfig a;
  a.set_username(auth->username);
  a.set_password(auth->password);
  return a;
}

// The credentials a source gives; none when there is no source.
FoundCredential look_up(const ImageStore::CredentialSource& credentials) {
  return credentials ? credentials() : FoundCredential(std::optional<RegistryCredential>());
}

// What a check is remembered by: the image and a hash of the credential (never the password itself).
std::string check_key(const std::string& ref, const std::optional<RegistryCredential>& auth) {
  if (!auth) return ref + "\n";
  return ref + "\n" + auth->username + "\n" + std::to_string(std::hash<std::string>{}(auth->password));
}

}  // namespace

ImageStore::ImageStore(CriClient& cri, PrivateImagePolicy policy, std::string private_list, PullWatch watch)
    : cri_(cri), policy_(policy), private_list_(std::move(private_list)), watch_(std::move(watch)) {
  if (private_list_.empty()) return;
  if (auto text = read_text(private_list_, 16u << 20))
    for (const std::string& ref : split(*text, '\n'))
      if (!ref.empty()) private_.insert(ref);
}

std::shared_ptr<ImageStore::Entry> ImageStore::entry_for(const std::string& ref) {
  std::lock_guard lock(mu_);
  auto& e = entries_[ref];
  if (!e) e = std::make_shared<Entry>();
  return e;
}

bool ImageStore::is_private(const std::string& ref) {
  std::lock_guard lock(mu_);
  return private_.count(ref) > 0;
}

Result<std::optional<ImageConfig>> ImageStore::read_config(const std::string& ref) {
  auto st = cri_.image_status(ref, true);
  if (!st) return st.take_error();
  if (!st->has_image()) return std::optional<ImageConfig>();
  std::map<std::string, std::string> info(st->info().begin(), st->info().end());
  auto config = parse_image_info(info);
  if (!config) return config.take_error();
  config->id = st->image().id();
  return std::optional<ImageConfig>(std::move(*config));
}

Result<ImageConfig> ImageStore::config_of(const std::string& ref, const CredentialSource& credentials) {
  auto config = read_config(ref);
  if (!config) return config.take_error();
  if (*config) return **config;
  return ensure(ref, credentials);
}

Result<std::string> ImageStore::pull(const std::string& ref, const std::optional<RegistryCredential>& auth) {
  auto pulled = cri_.pull_image(ref, cri_auth(auth));
  if (!pulled) {
    log_warn("pull of " + ref + (auth ? " as " + auth->username : "") + " failed: " + pulled.error());
    return fail(explain_pull_error(ref, pulled.error(), 0).line);
  }
  return pulled;
}

void ImageStore::mark_private(const std::string& ref) {
  std::lock_guard lock(mu_);
  if (!private_.insert(ref).second || private_list_.empty()) return;
  std::string text;
  for (const std::string& r : private_) text += r + "\n";
  std::string tmp = private_list_ + ".tmp";
  FILE* f = fopen(tmp.c_str(), "we");
  bool ok = f && fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f && fclose(f) != 0) ok = false;
  if (!ok || rename(tmp.c_str(), private_list_.c_str()) != 0)
    log_error("cannot record " + ref + " as private in " + private_list_ + ": " + errno_text(errno));
}

Status ImageStore::recheck(const std::string& ref, const CredentialSource& credentials) {
  auto found = look_up(credentials);
  if (!found) return found.take_error();
  if (!found->has_value() && policy_ == PrivateImagePolicy::kPrivate)
    return fail("image " + ref + " is private on this node (it was pulled with credentials): put yours for its "
                "registry in ~/.config/enroot/.credentials (netrc) or ~/.docker/config.json");
  std::string key = check_key(ref, *found);
  {
    std::lock_guard lock(mu_);
    auto it = checked_.find(key);
    if (it != checked_.end() && std::chrono::steady_clock::now() - it->second < kCheckValid) return Ok{};
  }
  // The registry checks the manifest against these credentials; present layers are not fetched again.
  auto pulled = pull(ref, *found);
  if (!pulled) return pulled.take_error();
  std::lock_guard lock(mu_);
  checked_[key] = std::chrono::steady_clock::now();
  return Ok{};
}

ImageStore::~ImageStore() {
  {
    std::lock_guard lock(mu_);
    for (auto& [ref, entry] : entries_) {
      std::lock_guard l(entry->mu);
      if (entry->pull) entry->pull->canceller.cancel();
    }
  }
  slots_.wait_idle();
}

Result<ImageConfig> ImageStore::ensure(const std::string& ref, const CredentialSource& credentials,
                                       const PullWaiter& waiter) {
  auto entry = entry_for(ref);
  bool waited = false, started = false;
  for (;;) {
    std::shared_ptr<Pull> pull;
    {
      std::lock_guard lock(entry->mu);
      if (entry->pull) {
        pull = entry->pull;
      } else {
        auto present = read_config(ref);
        if (!present) return present.take_error();
        if (*present) {
          bool guarded = policy_ == PrivateImagePolicy::kAlways || (policy_ == PrivateImagePolicy::kPrivate && is_private(ref));
          // The pull this request started checked its own credentials.
          if (guarded && !started)
            if (auto s = recheck(ref, credentials); !s) return s.take_error();
          if (!started) (waited ? counters_.merged : counters_.cached)++;
          return **present;
        }
        if (waited) return fail("image " + ref + " vanished from the store right after its pull");
        auto found = look_up(credentials);
        if (!found) return found.take_error();
        auto made = start_pull(ref, *found, entry, waiter.uid);
        if (!made) return made.take_error();
        pull = *made;
        started = true;
      }
    }
    waited = true;
    if (auto s = wait_for(*pull, waiter); !s) return s.take_error();
  }
}

Result<bool> ImageStore::prefetch(const std::string& ref, const CredentialSource& credentials, uint32_t uid) {
  auto entry = entry_for(ref);
  std::lock_guard lock(entry->mu);
  if (entry->pull) return true;
  auto config = read_config(ref);
  if (!config) return config.take_error();
  if (*config) return false;
  auto found = look_up(credentials);
  if (!found) return found.take_error();
  if (auto made = start_pull(ref, *found, entry, uid); !made) return made.take_error();
  return true;
}

Result<std::shared_ptr<ImageStore::Pull>> ImageStore::start_pull(const std::string& ref,
                                                                 const std::optional<RegistryCredential>& auth,
                                                                 const std::shared_ptr<Entry>& entry, uint32_t uid) {
  if (auto s = slots_.take(uid); !s) return s.take_error();
  auto pull = std::make_shared<Pull>();
  pull->started_ns = wall_ns();
  counters_.started++;
  log_info("pulling " + ref + (auth ? " as " + auth->username : ""));
  entry->pull = pull;
  try {
    std::thread([this, ref, auth, entry, pull, uid] { run_pull(ref, auth, entry, pull, uid); }).detach();
  } catch (const std::system_error& e) {
    slots_.give(uid);
    entry->pull.reset();
    return fail("crispd cannot start a thread to pull " + ref + " (" + e.what() + "): try again");
  }
  return pull;
}

void ImageStore::run_pull(const std::string& ref, const std::optional<RegistryCredential>& auth,
                          const std::shared_ptr<Entry>& entry, const std::shared_ptr<Pull>& pull, uint32_t uid) {
  std::thread watcher([&] { watch_pull(ref, *pull); });
  auto pulled = pull_retrying(ref, auth, *pull);
  {
    std::lock_guard l(pull->mu);
    pull->call_over = true;  // the watcher stops
  }
  pull->cv.notify_all();
  watcher.join();
  Status result = Ok{};
  double seconds = static_cast<double>(wall_ns() - pull->started_ns) / 1e9;
  if (pulled) {
    watch_.metrics->pull_ended("", seconds, fetched_bytes(ref, *pull));
    log_info("pulled " + ref + " as " + *pulled);
    if (auth) {
      mark_private(ref);
      std::lock_guard l(mu_);
      checked_[check_key(ref, auth)] = std::chrono::steady_clock::now();
    }
  } else {
    counters_.failed++;
    watch_.metrics->pull_ended(pull->failure, seconds, fetched_bytes(ref, *pull));
    abandon(ref, *pull);
    result = pulled.take_error();
  }
  {
    std::lock_guard l(entry->mu);
    entry->pull.reset();
  }
  {
    std::lock_guard l(pull->mu);
    pull->result = std::move(result);
    pull->done = true;
  }
  pull->cv.notify_all();
  slots_.give(uid);
}

// A registry's 429 is tried again after a pause (containerd does not pass its Retry-After on).
Result<std::string> ImageStore::pull_retrying(const std::string& ref, const std::optional<RegistryCredential>& auth,
                                              Pull& pull) {
  std::string who = auth ? " as " + auth->username : "";
  for (size_t attempt = 0;; ++attempt) {
    auto pulled = cri_.pull_image(ref, cri_auth(auth), &pull.canceller);
    if (pulled) return pulled;
    std::unique_lock l(pull.mu);
    if (pull.stalled) {
      pull.failure = "stalled";
      counters_.stalled++;
      log_warn("pull of " + ref + who + " cut: nothing arrived for " + std::to_string(watch_.stall_limit.count()) + " s");
      return fail(stall_line(ref, watch_.stall_limit));
    }
    log_warn("pull of " + ref + who + " failed: " + pulled.error());
    PullError why = explain_pull_error(ref, pulled.error(), watch_.rate_limit_pauses.size());
    pull.failure = pulled.error_kind() == ErrorKind::kCancelled ? "cancelled" : failure_label(why.kind);
    if (why.kind != PullFailure::kRateLimited || attempt >= watch_.rate_limit_pauses.size() ||
        pulled.error_kind() == ErrorKind::kCancelled)
      return fail(why.line);
    auto pause = watch_.rate_limit_pauses[attempt];
    pull.line = "pulling " + ref + ": the registry is limiting pulls (429), trying again in " +
                std::to_string(pause.count()) + " s";
    pull.pausing = true;
    // A cancel (crispd stopping) ends the pause.
    bool cancelled = pull.cv.wait_for(l, pause, [&] { return pull.canceller.cancelled(); });
    pull.pausing = false;
    if (cancelled) return fail(why.line);
  }
}

Status ImageStore::wait_for(Pull& pull, const PullWaiter& waiter) {
  auto start = std::chrono::steady_clock::now();
  auto last_line = start - watch_.progress_every;
  std::unique_lock l(pull.mu);
  while (!pull.done) {
    pull.cv.wait_for(l, std::chrono::seconds(1));
    if (pull.done) break;
    auto now = std::chrono::steady_clock::now();
    std::string line = now - start >= watch_.progress_after && now - last_line >= watch_.progress_every ? pull.line : "";
    l.unlock();
    if (waiter.stop)
      if (auto why = waiter.stop()) return fail(ErrorKind::kCancelled, *why);
    if (!line.empty() && waiter.progress) {
      waiter.progress(line);
      last_line = now;
    }
    l.lock();
  }
  return pull.result;
}

namespace {

constexpr int64_t kManifestMax = 4 << 20;
constexpr int kInfoPerSample = 32;

// The label containerd puts on what it fetched from the image's registry (its value: the
// repository); it names the registry's host without its port.
std::string source_label(const ImageRef& image) {
  size_t colon = image.registry.rfind(':');
  std::string host = colon == std::string::npos || image.registry.back() == ']' ? image.registry
                                                                                : image.registry.substr(0, colon);
  return "containerd.io/distribution.source." + host;
}

// The manifest this pull fetched: of the image's repository (containerd labels content with
// its source) and naming, among its children (the labels containerd puts on a manifest), a
// blob being fetched now. Other manifests of the repository are whole images already.
std::optional<std::vector<Blob>> find_manifest(ContentClient& content, const ImageRef& image,
                                               const std::set<std::string>& ingesting) {
  auto infos = content.with_label(source_label(image), image.repository);
  if (!infos) return std::nullopt;
  for (const ContentInfo& i : *infos) {
    bool fetching = false;
    for (const auto& [key, value] : i.labels)
      fetching = fetching || (key.starts_with("containerd.io/gc.ref.content.") && ingesting.count(value));
    if (!fetching) continue;
    auto text = content.read(i.digest, kManifestMax);
    if (!text) return std::nullopt;
    return manifest_blobs(*text);
  }
  return std::nullopt;
}

// One look at the content store: how far the pull is. blobs and present are
// filled in as they become known.
Result<PullAmount> sample_content(ContentClient& content, const std::optional<ImageRef>& image, int64_t since_ns,
                                  std::optional<std::vector<Blob>>& blobs, std::set<std::string>& present) {
  auto listed = content.ingests();
  if (!listed) return listed.take_error();
  std::vector<IngestBytes> ingests;
  std::set<std::string> ingesting;
  for (const Ingest& i : *listed) {
    ingests.push_back({i.ref, i.offset, i.total, i.started_ns});
    ingesting.insert(ingest_digest(i.ref));
  }
  if (!blobs && image) blobs = find_manifest(content, *image, ingesting);
  // A few questions a second: the rest of a large image's blobs are asked about in later samples.
  int asked = 0;
  if (blobs)
    for (const Blob& b : *blobs)
      if (!present.count(b.digest) && !ingesting.count(b.digest) && asked++ < kInfoPerSample)
        if (auto info = content.info(b.digest); info && *info) present.insert(b.digest);
  return tally(blobs, ingests, present, since_ns);
}

}  // namespace

void ImageStore::watch_pull(const std::string& ref, Pull& pull) {
  if (!watch_.content) return;
  auto image = parse_image_ref(ref);
  std::optional<ImageRef> parsed = image ? std::optional<ImageRef>(*image) : std::nullopt;
  std::optional<std::vector<Blob>> blobs;
  std::set<std::string> present;
  using Clock = std::chrono::steady_clock;
  std::deque<std::pair<Clock::time_point, int64_t>> recent;  // (when, bytes done), the last 10 s: the rate
  int64_t last_moved = -1;
  auto last_change = Clock::now();
  bool told = false;
  std::unique_lock l(pull.mu);
  while (!pull.call_over) {
    pull.cv.wait_for(l, std::chrono::seconds(1));
    if (pull.call_over) break;
    l.unlock();
    auto amount = sample_content(*watch_.content, parsed, pull.started_ns, blobs, present);
    auto now = Clock::now();
    if (!amount && !told) log_warn("cannot follow the pull of " + ref + " in containerd's content store: " + amount.error());
    told = told || !amount;
    l.lock();
    if (pull.pausing) last_change = now;  // the registry asked for the pause
    if (!amount || pull.pausing) continue;  // no stall limit without a view of the bytes
    if (amount->moved != last_moved) {
      last_moved = amount->moved;
      last_change = now;
    }
    recent.emplace_back(now, amount->done);
    while (recent.size() > 1 && now - recent.front().first > std::chrono::seconds(10)) recent.pop_front();
    double seconds = std::chrono::duration<double>(now - recent.front().first).count();
    double rate = seconds > 0 ? static_cast<double>(std::max<int64_t>(0, amount->done - recent.front().second)) / seconds : 0;
    pull.line = progress_line(ref, *amount, rate);
    pull.blobs = blobs;
    if (now - last_change >= watch_.stall_limit) {
      pull.stalled = true;
      pull.canceller.cancel();
      break;
    }
  }
}

// What the repository's blobs committed since the pull began weigh: what it fetched (a pull of
// another tag of the repository at the same time is counted in both).
double ImageStore::fetched_bytes(const std::string& ref, const Pull& pull) {
  auto image = parse_image_ref(ref);
  if (!watch_.content || !image) return 0;
  auto infos = watch_.content->with_label(source_label(*image), image->repository);
  if (!infos) return 0;
  double bytes = 0;
  for (const ContentInfo& i : *infos)
    if (i.created_ns >= pull.started_ns) bytes += static_cast<double>(i.size);
  return bytes;
}

void ImageStore::abandon(const std::string& ref, Pull& pull) {
  if (!watch_.content) return;
  bool others = false;
  {
    std::lock_guard lock(mu_);
    for (auto& [r, entry] : entries_) {
      std::lock_guard l(entry->mu);
      others = others || (entry->pull && entry->pull.get() != &pull);
    }
  }
  std::optional<std::vector<Blob>> blobs;
  {
    std::lock_guard l(pull.mu);
    blobs = pull.blobs;
  }
  // Without its manifest, the pull's ingests are told apart only when no other pull runs.
  if (!blobs && others) return;
  auto ingests = watch_.content->ingests();
  if (!ingests) return log_warn("cannot list the ingests of the failed pull of " + ref + ": " + ingests.error());
  int aborted = 0;
  for (const Ingest& i : *ingests)
    if (ingest_of_pull({i.ref, i.offset, i.total, i.started_ns}, blobs, pull.started_ns)) {
      if (auto s = watch_.content->abort(i.ref); !s) log_warn("aborting " + i.ref + ": " + s.error());
      else aborted++;
    }
  if (aborted) log_info("aborted " + std::to_string(aborted) + " partial download(s) of " + ref);
}

}  // namespace crisp
