#include "agent/site/user_site_dir.h"

#include <dirent.h>
#include <fcntl.h>

#include <algorithm>

#include "common/fd.h"
#include "common/strings.h"

namespace crisp {
namespace {

// The names ending in suffix in the user's directory dir (sorted, at most kMaxUserSiteFiles),
// listed through a descriptor the user opened; none where it is absent.
Result<std::vector<std::string>> user_names(const UserCreds& creds, const std::string& dir, std::string_view suffix) {
  std::vector<std::string> names;
  auto opened = open_as_user(creds, dir);
  if (!opened && opened.error_kind() == ErrorKind::kNotFound) return names;
  if (!opened) return fail("your enroot configuration " + opened.error());
  if (!opened->is_directory) return fail("your enroot configuration " + dir + " is not a directory");
  Fd listing(fcntl(opened->fd.get(), F_DUPFD_CLOEXEC, 0));
  DIR* d = listing ? fdopendir(listing.get()) : nullptr;
  if (!d) return fail("your enroot configuration " + dir + ": " + errno_text(errno));
  listing.release();  // closedir closes it
  while (dirent* e = readdir(d))
    if (std::string_view n = e->d_name; n.size() > suffix.size() && n.ends_with(suffix)) names.emplace_back(n);
  closedir(d);
  std::sort(names.begin(), names.end());
  if (names.size() > kMaxUserSiteFiles) names.resize(kMaxUserSiteFiles);
  return names;
}

// The texts of those files, read as the user (one that vanished or is not theirs to read: left out).
Result<std::vector<std::pair<std::string, std::string>>> user_texts(const UserCreds& creds, const std::string& dir,
                                                                    std::string_view suffix) {
  auto names = user_names(creds, dir, suffix);
  if (!names) return names.take_error();
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& n : *names) {
    auto text = read_file_as_user(creds, dir + "/" + n, kMaxSiteFileBytes);
    if (!text) return fail("your enroot configuration " + text.error());
    if (*text) out.emplace_back(dir + "/" + n, std::move(**text));
  }
  return out;
}

}  // namespace

std::optional<std::string> user_enroot_dir(const EnvLookup& job_env) {
  std::string dir;
  if (auto p = job_env("ENROOT_CONFIG_PATH"); p && !p->empty()) dir = *p;
  else if (auto x = job_env("XDG_CONFIG_HOME"); x && !x->empty()) dir = *x + "/enroot";
  else if (auto h = job_env("HOME"); h && !h->empty()) dir = *h + "/.config/enroot";
  if (dir.empty() || dir.front() != '/') return std::nullopt;
  return dir;
}

Status read_user_enroot_dir(const UserCreds& creds, const std::string& dir, SiteLines& out) {
  // Most users have none: one look. One they cannot open is no configuration of theirs.
  if (!open_as_user(creds, dir)) return Ok{};
  auto mounts = user_texts(creds, dir + "/mounts.d", ".fstab");
  if (!mounts) return mounts.take_error();
  for (auto& [origin, text] : *mounts) {
    std::vector<std::string> lines = split(text, '\n');
    for (size_t i = 0; i < lines.size(); ++i)
      out.mounts.push_back({origin + ":" + std::to_string(i + 1), std::move(lines[i]), true, true});
  }
  auto environ = user_texts(creds, dir + "/environ.d", ".env");
  if (!environ) return environ.take_error();
  for (auto& [origin, text] : *environ) out.environ.push_back({origin, std::move(text), true, true});
  auto hooks = user_names(creds, dir + "/hooks.d", ".sh");
  if (!hooks) return hooks.take_error();
  for (const std::string& n : *hooks) out.hooks.push_back({dir + "/hooks.d/" + n, false});
  return Ok{};
}

}  // namespace crisp
