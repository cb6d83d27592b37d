#include "agent/images/image_store.h"

#include "common/log.h"

namespace crisp {

std::shared_ptr<ImageStore::Entry> ImageStore::entry_for(const std::string& ref) {
  std::lock_guard lock(mu_);
  auto& e = entries_[ref];
  if (!e) e = std::make_shared<Entry>();
  return e;
}

Result<ImageConfig> ImageStore::read_config(const std::string& ref, bool& present) {
  auto st = cri_.image_status(ref, true);
  if (!st) return st.take_error();
  present = st->has_image();
  if (!present) return ImageConfig{};
  std::map<std::string, std::string> info(st->info().begin(), st->info().end());
  return parse_image_info(info);
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
    (entry->completed > completed_before ? counters_.merged : counters_.cached)++;
    return config;
  }
  auto found = credentials ? credentials() : FoundCredential(std::optional<RegistryCredential>());
  if (!found) return found.take_error();
  const std::optional<RegistryCredential>& auth = *found;
  counters_.started++;
  log_info("pulling " + ref + (auth ? " as " + auth->username : ""));
  std::optional<cri::AuthConfig> cri_auth;
  if (auth) {
    cri_auth.emplace();
    cri_auth->set_username(auth->username);
    cri_auth->set_password(auth->password);
  }
  auto pulled = cri_.pull_image(ref, cri_auth);
  entry->completed++;
  if (!pulled) {
    log_warn("pull of " + ref + " failed: " + pulled.error());
    return fail(explain_pull_error(ref, pulled.error()));
  }
  log_info("pulled " + ref + " as " + *pulled);
  config = read_config(ref, present);
  if (config && !present) return fail("image " + ref + " vanished from the store right after its pull");
  return config;
}

}  // namespace crisp
