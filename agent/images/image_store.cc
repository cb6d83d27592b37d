#include "agent/images/image_store.h"

#include <cerrno>
#include <cstdio>
#include <functional>

#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"

namespace crisp {
namespace {

constexpr std::chrono::hours kCheckValid{1};

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

ImageStore::ImageStore(CriClient& cri, PrivateImagePolicy policy, std::string private_list)
    : cri_(cri), policy_(policy), private_list_(std::move(private_list)) {
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

Result<ImageConfig> ImageStore::read_config(const std::string& ref, bool& present) {
  auto st = cri_.image_status(ref, true);
  if (!st) return st.take_error();
  present = st->has_image();
  if (!present) return ImageConfig{};
  std::map<std::string, std::string> info(st->info().begin(), st->info().end());
  return parse_image_info(info);
}

Result<ImageConfig> ImageStore::config_of(const std::string& ref, const CredentialSource& credentials) {
  bool present = false;
  auto config = read_config(ref, present);
  if (!config || present) return config;
  return ensure(ref, credentials);
}

Result<std::string> ImageStore::pull(const std::string& ref, const std::optional<RegistryCredential>& auth) {
  auto pulled = cri_.pull_image(ref, cri_auth(auth));
  if (!pulled) {
    log_warn("pull of " + ref + (auth ? " as " + auth->username : "") + " failed: " + pulled.error());
    return fail(explain_pull_error(ref, pulled.error()));
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

Result<ImageConfig> ImageStore::ensure(const std::string& ref, const CredentialSource& credentials) {
  auto entry = entry_for(ref);
  uint64_t completed_before = entry->completed;
  // One holder of `pulling` at a time checks the store and pulls; the others
  // find the image present when they get the lock.
  std::lock_guard lock(entry->pulling);
  bool present = false;
  auto config = read_config(ref, present);
  if (!config) return config;
  if (present) {
    bool guarded = policy_ == PrivateImagePolicy::kAlways || (policy_ == PrivateImagePolicy::kPrivate && is_private(ref));
    if (guarded)
      if (auto s = recheck(ref, credentials); !s) return s.take_error();
    (entry->completed > completed_before ? counters_.merged : counters_.cached)++;
    return config;
  }
  auto found = look_up(credentials);
  if (!found) return found.take_error();
  const std::optional<RegistryCredential>& auth = *found;
  counters_.started++;
  log_info("pulling " + ref + (auth ? " as " + auth->username : ""));
  auto pulled = pull(ref, auth);
  entry->completed++;
  if (!pulled) return pulled.take_error();
  log_info("pulled " + ref + " as " + *pulled);
  if (auth) {
    mark_private(ref);
    std::lock_guard l(mu_);
    checked_[check_key(ref, auth)] = std::chrono::steady_clock::now();
  }
  config = read_config(ref, present);
  if (config && !present) return fail("image " + ref + " vanished from the store right after its pull");
  return config;
}

}  // namespace crisp
