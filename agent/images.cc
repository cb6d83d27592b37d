#include "agent/images.h"

#include "agent/log.h"

namespace crisp {

std::shared_ptr<ImageStore::Entry> ImageStore::entry_for(const std::string& ref) {
  std::lock_guard lock(mu_);
  auto& e = entries_[ref];
  if (!e) e = std::make_shared<Entry>();
  return e;
}

Result<ImageConfig> ImageStore::read_config(const std::string& ref, bool& present) {
  auto st = cri_.image_status(ref, true);
  if (!st) return Error{st.error()};
  present = st->has_image();
  if (!present) return ImageConfig{};
  std::map<std::string, std::string> info(st->info().begin(), st->info().end());
  return parse_image_info(info);
}

Result<ImageConfig> ImageStore::ensure(const std::string& ref, const std::optional<RegistryCredential>& auth) {
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
  counters_.started++;
  log_info("pulling " + ref + (auth ? " as " + auth->username : ""));
  auto pulled = cri_.pull_image(ref, auth);
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

std::string explain_pull_error(const std::string& ref, const std::string& cri_error) {
  auto has = [&](const char* s) { return cri_error.find(s) != std::string::npos; };
  if (has("not found") || has("manifest unknown") || has("NAME_UNKNOWN"))
    return "image " + ref + " was not found in its registry: check the name and tag";
  if (has("nauthorized") || has(" 401 ") || has("authentication required") || has("denied"))
    return "the registry refused access to image " + ref + ": put credentials for its registry in ~/.config/enroot/.credentials (netrc) or ~/.docker/config.json";
  if (has("connection refused") || has("no such host") || has("i/o timeout") || has("dial tcp"))
    return "cannot reach the registry of image " + ref + ": " + cri_error;
  return "cannot pull image " + ref + ": " + cri_error;
}

}  // namespace crisp
