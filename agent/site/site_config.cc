#include "agent/site/site_config.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <tuple>

#include "agent/host/admin_paths.h"
#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"

namespace crisp {
namespace {

// Regular files named *suffix in the directory dir_fd, sorted, each root's and written by
// root alone: (name, content). Problems go to report.
template <typename Report>
std::vector<std::pair<std::string, std::string>> admin_files(int dir_fd, const std::string& dir, const std::string& suffix,
                                                             const Report& report) {
  std::vector<std::pair<std::string, std::string>> out;
  Fd listing(openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  DIR* d = listing ? fdopendir(listing.get()) : nullptr;
  if (!d) {
    report(dir + ": " + errno_text(errno));
    return out;
  }
  listing.release();  // closedir closes it
  std::vector<std::string> names;
  while (dirent* e = readdir(d))
    if (std::string n = e->d_name; n.size() > suffix.size() && n.ends_with(suffix)) names.push_back(n);
  closedir(d);
  std::sort(names.begin(), names.end());
  if (names.size() > kMaxSiteFiles) {
    report(dir + ": more than " + std::to_string(kMaxSiteFiles) + " files, the rest skipped");
    names.resize(kMaxSiteFiles);
  }
  for (const std::string& n : names) {
    Fd f(openat(dir_fd, n.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat st {};
    if (!f || fstat(f.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
      report(dir + "/" + n + ": skipped: not a regular file that root owns and alone may write");
      continue;
    }
    auto text = read_up_to(f.get(), kMaxSiteFileBytes + 1);
    if (!text || text->size() > kMaxSiteFileBytes) {
      report(dir + "/" + n + ": skipped: " + (text ? "larger than 1 MiB" : text.error()));
      continue;
    }
    out.emplace_back(n, std::move(*text));
  }
  return out;
}

}  // namespace

bool SiteConfig::has_partitions() const {
  struct stat st {};
  return std::any_of(dirs_.begin(), dirs_.end(),
                     [&](const SiteDir& d) { return !d.enroot && stat((d.path + "/partitions").c_str(), &st) == 0; });
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

// dir's mounts.d and environ.d, where they exist and root alone controls them.
void SiteConfig::read_dir(const std::string& dir, bool read_write_default, SiteLines& out) const {
  auto reporter = [this](const std::string& p) { report(p); };
  for (const auto& [sub, suffix, into] : {std::tuple{"/mounts.d", ".fstab", &out.mounts}, {"/environ.d", ".env", &out.environ}}) {
    std::string path = dir + sub;
    auto opened = open_admin_path(path);
    if (!opened && opened.error_kind() == ErrorKind::kNotFound) continue;
    struct stat st {};
    if (opened && (fstat(opened->fd.get(), &st) != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))))
      opened = fail(ErrorKind::kRefused, "others than root may write it");
    if (!opened) {
      report(path + ": skipped: " + opened.error());
      continue;
    }
    for (auto& [name, text] : admin_files(opened->fd.get(), path, suffix, reporter)) {
      std::string origin = path + "/" + name;
      if (into == &out.environ) {
        into->push_back({origin, std::move(text), read_write_default});
        continue;
      }
      std::vector<std::string> lines = split(text, '\n');
      for (size_t i = 0; i < lines.size(); ++i)
        into->push_back({origin + ":" + std::to_string(i + 1), std::move(lines[i]), read_write_default});
    }
  }
}

// What of an enroot directory crisp does not read, said once rather than ignored in silence.
void SiteConfig::report_unread(const std::string& dir) const {
  for (const std::string& name : list_dir(dir + "/hooks.d"))
    if (name.ends_with(".sh"))
      report(dir + "/hooks.d/" + name + ": not run: crisp runs no enroot hooks (its own GPU, RDMA, PMI, user and " +
             "home setup does what enroot's standard ones do)");
  struct stat st {};
  if (stat((dir + "/enroot.conf").c_str(), &st) == 0)
    report(dir + "/enroot.conf: not read: crisp's own defaults apply (the admin guide's \"Migrating a Pyxis+enroot " +
           "site\" compares them)");
}

SiteLines SiteConfig::lines_for(const std::string& partition) const {
  SiteLines out;
  for (const SiteDir& d : dirs_) {
    read_dir(d.path, d.enroot, out);
    if (d.enroot) report_unread(d.path);
  }
  if (!partition.empty() && partition.find('/') == std::string::npos && partition != "." && partition != "..")
    for (const SiteDir& d : dirs_)
      if (!d.enroot) read_dir(d.path + "/partitions/" + partition, false, out);
  return out;
}

}  // namespace crisp
