#include "agent/site/site_config.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <functional>

#include "agent/host/admin_paths.h"
#include "agent/site/enroot_conf.h"
#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"

namespace crisp {
namespace {

using Reporter = std::function<void(const std::string&)>;

// run-parts' rule for a program's name (Debian's default): letters, digits, '_' and '-'
// (so no editor's backup or package manager's leftover runs).
bool run_parts_name(std::string_view n) {
  return !n.empty() && std::all_of(n.begin(), n.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; });
}

// The names in the directory dir_fd that take (sorted, at most kMaxSiteFiles).
std::vector<std::string> names_in(int dir_fd, const std::string& dir, const std::function<bool(std::string_view)>& take,
                                  const Reporter& report) {
  std::vector<std::string> names;
  Fd listing(openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  DIR* d = listing ? fdopendir(listing.get()) : nullptr;
  if (!d) {
    report(dir + ": " + errno_text(errno));
    return names;
  }
  listing.release();  // closedir closes it
  while (dirent* e = readdir(d))
    if (take(e->d_name)) names.emplace_back(e->d_name);
  closedir(d);
  std::sort(names.begin(), names.end());
  if (names.size() > kMaxSiteFiles) {
    report(dir + ": more than " + std::to_string(kMaxSiteFiles) + " files, the rest skipped");
    names.resize(kMaxSiteFiles);
  }
  return names;
}

std::function<bool(std::string_view)> ending_in(std::string_view suffix) {
  return [suffix](std::string_view n) { return n.size() > suffix.size() && n.ends_with(suffix); };
}

// name in dir_fd where it is a regular file root owns and alone may write (st: its status).
Fd open_admin_file(int dir_fd, const std::string& dir, const std::string& name, struct stat& st, const Reporter& report) {
  Fd f(openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!f || fstat(f.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || others_may_write(st)) {
    report(dir + "/" + name + ": skipped: not a regular file that root owns and alone may write");
    return Fd();
  }
  return f;
}

// The files named *suffix in dir_fd: (name, content).
std::vector<std::pair<std::string, std::string>> admin_texts(int dir_fd, const std::string& dir, std::string_view suffix,
                                                             const Reporter& report) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& n : names_in(dir_fd, dir, ending_in(suffix), report)) {
    struct stat st {};
    Fd f = open_admin_file(dir_fd, dir, n, st, report);
    if (!f) continue;
    auto text = read_up_to(f.get(), kMaxSiteFileBytes + 1);
    if (!text || text->size() > kMaxSiteFileBytes) {
      report(dir + "/" + n + ": skipped: " + (text ? "larger than 1 MiB" : text.error()));
      continue;
    }
    out.emplace_back(n, std::move(*text));
  }
  return out;
}

// The directory path where root alone controls it; an invalid descriptor where it is absent
// or refused (reported).
Fd admin_dir(const std::string& path, const Reporter& report) {
  auto opened = open_admin_path(path);
  if (!opened && opened.error_kind() == ErrorKind::kNotFound) return Fd();
  struct stat st {};
  if (opened && (fstat(opened->fd.get(), &st) != 0 || others_may_write(st)))
    opened = fail(ErrorKind::kRefused, "others than root may write it");
  if (!opened) {
    report(path + ": skipped: " + opened.error());
    return Fd();
  }
  return std::move(opened->fd);
}

bool built_in_enroot_hook(std::string_view name) {
  return std::find(std::begin(kBuiltInEnrootHooks), std::end(kBuiltInEnrootHooks), name) != std::end(kBuiltInEnrootHooks);
}

}  // namespace

SiteConfig::SiteConfig(std::vector<SiteDir> dirs) : dirs_(std::move(dirs)) {
  for (const SiteDir& d : dirs_)
    if (d.enroot) report_unread(d.path);
}

bool SiteConfig::has_partitions() const {
  struct stat st {};
  return std::any_of(dirs_.begin(), dirs_.end(),
                     [&](const SiteDir& d) { return !d.enroot && stat((d.path + "/partitions").c_str(), &st) == 0; });
}

bool SiteConfig::reads_users() const {
  return std::any_of(dirs_.begin(), dirs_.end(), [](const SiteDir& d) { return d.enroot && d.users; });
}

void SiteConfig::report(const std::string& key, const std::string& message) const {
  {
    std::lock_guard lock(mu_);
    if (reported_.size() >= 4096 || !reported_.insert(key).second) return;
  }
  std::string shown = message.substr(0, kMaxReportBytes);
  for (char& c : shown)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  log_warn("site configuration: " + shown + (message.size() > kMaxReportBytes ? "..." : ""));
}

// dir's mounts.d, environ.d and hooks, where they exist and root alone controls them.
void SiteConfig::read_dir(const std::string& dir, bool enroot, SiteLines& out) const {
  Reporter reporter = [this](const std::string& p) { report(p); };
  std::string path = dir + "/mounts.d";
  if (Fd d = admin_dir(path, reporter))
    for (auto& [name, text] : admin_texts(d.get(), path, ".fstab", reporter)) {
      std::vector<std::string> lines = split(text, '\n');
      for (size_t i = 0; i < lines.size(); ++i)
        out.mounts.push_back({path + "/" + name + ":" + std::to_string(i + 1), std::move(lines[i]), enroot});
    }
  path = dir + "/environ.d";
  if (Fd d = admin_dir(path, reporter))
    for (auto& [name, text] : admin_texts(d.get(), path, ".env", reporter))
      out.environ.push_back({path + "/" + name, std::move(text), enroot});
  read_hooks(dir + "/hooks.d", enroot, false, out);
  if (!enroot) read_hooks(dir + "/root-hooks.d", false, true, out);
}

// The programs of dir: enroot's *.sh but its standard ones, or crisp's run-parts names.
void SiteConfig::read_hooks(const std::string& dir, bool enroot, bool as_root, SiteLines& out) const {
  Reporter reporter = [this](const std::string& p) { report(p); };
  Fd d = admin_dir(dir, reporter);
  if (!d) return;
  auto take = enroot ? ending_in(".sh") : std::function<bool(std::string_view)>(run_parts_name);
  for (const std::string& n : names_in(d.get(), dir, take, reporter)) {
    if (enroot && built_in_enroot_hook(n)) continue;
    struct stat st {};
    if (!open_admin_file(d.get(), dir, n, st, reporter)) continue;
    if (!(st.st_mode & (as_root ? S_IXUSR : S_IXOTH)))
      report(dir + "/" + n + ": skipped: not executable by " + (as_root ? "root" : "everyone"));
    else if (st.st_mode & (S_ISUID | S_ISGID))
      report(dir + "/" + n + ": skipped: set-user-ID or set-group-ID (a hook runs with the ids it is given)");
    else
      out.hooks.push_back({dir + "/" + n, as_root});
  }
}

// What of an enroot directory crisp does not use, said once at start rather than ignored.
void SiteConfig::report_unread(const std::string& dir) const {
  for (const std::string& name : list_dir(dir + "/hooks.d"))
    if (built_in_enroot_hook(name))
      report(dir + "/hooks.d/" + name + ": not run: crisp does this standard hook's work itself (the admin guide's " +
             "\"Migrating a Pyxis+enroot site\")");
  Reporter reporter = [this](const std::string& p) { report(p); };
  std::string conf = dir + "/enroot.conf";
  Fd d = admin_dir(dir, reporter);
  struct stat st {};
  if (!d || fstatat(d.get(), "enroot.conf", &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  Fd file = open_admin_file(d.get(), dir, "enroot.conf", st, reporter);
  auto text = file ? read_up_to(file.get(), kMaxSiteFileBytes) : Result<std::string>("");
  if (!text) report(conf + ": skipped: " + text.error());
  for (const auto& [name, value] : parse_enroot_conf(text ? *text : ""))
    report(conf + ":" + name, conf + ": " + name + " " + value + ": " + crisp_meaning_of(name));
}

SiteLines SiteConfig::lines_for(const std::string& partition) const {
  SiteLines out;
  for (const SiteDir& d : dirs_) read_dir(d.path, d.enroot, out);
  if (!partition.empty() && partition.find('/') == std::string::npos && partition != "." && partition != "..")
    for (const SiteDir& d : dirs_)
      if (!d.enroot) read_dir(d.path + "/partitions/" + partition, false, out);
  return out;
}

}  // namespace crisp
