// SiteConfig: the container configuration an admin gives every container on the node,
// in enroot's file forms, from the directories crispd is pointed at:
//   crisp's own (--site-config, /etc/crisp):  mounts.d/*.fstab, environ.d/*.env, hooks.d/*
//     (programs run as the user) and root-hooks.d/* (as root), and the same under
//     partitions/NAME/ for the jobs of partition NAME alone; mounts read-only unless "rw";
//   enroot's (--enroot-config, /etc/enroot):  its mounts.d, environ.d and hooks.d/*.sh as
//     enroot reads them (mounts read-write unless "ro"; hooks as the user), so a site that
//     ran Pyxis keeps its files. enroot's standard hooks are not run: crisp does their work
//     itself (kBuiltInEnrootHooks); those found are logged at start, as enroot.conf is.
// Files are read afresh for each container (a few small files: an admin's edit applies
// to the next job, no reload), only where root owns the whole path and no one else may
// write it, in name order as enroot's run-parts. Each problem (a file skipped, a line not
// supported) is logged once, naming the file and line. Calls: agent/host/admin_paths.h.
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace crisp {

struct SiteDir {
  std::string path;
  bool enroot = false;  // enroot's defaults (mounts read-write), no partitions/
  bool users = false;   // enroot's: each user's own configuration too (user_site_dir.h)
};

// A line of a site file and where it is ("/etc/crisp/mounts.d/10-fs.fstab:3").
struct SiteLine {
  std::string origin;
  std::string text;
  bool read_write_default = false;
  bool users = false;  // from the user's own enroot configuration (user_site_dir.h)
};

// A program the admin (or the user, in their enroot configuration) gives every new
// container (agent/steps/step_site.h runs it).
struct SiteHook {
  std::string path;
  bool as_root = false;
};

// What applies to one job: its partition's lines after everyone's.
struct SiteLines {
  std::vector<SiteLine> mounts;
  std::vector<SiteLine> environ;  // one per file (text: the whole file)
  std::vector<SiteHook> hooks;    // in the order they run
};

// enroot's own hooks (enroot's conf/hooks and extra/), whose work crisp does itself.
inline constexpr const char* kBuiltInEnrootHooks[] = {
    "10-aptfix.sh",  "10-cgroups.sh",  "10-devices.sh",    "10-home.sh",          "10-localtime.sh",
    "10-shadow.sh",  "98-nvidia.sh",   "99-mellanox.sh",   "50-slurm-pmi.sh",     "50-slurm-pytorch.sh",
};

inline constexpr size_t kMaxSiteFileBytes = 1 << 20;
inline constexpr size_t kMaxSiteFiles = 256;  // per directory
inline constexpr size_t kMaxReportBytes = 300;

class SiteConfig {
 public:
  // Logs, once, what of enroot's directories crisp does not use.
  explicit SiteConfig(std::vector<SiteDir> dirs);

  // Whether any directory has partitions/ (then a job's partition is asked for).
  bool has_partitions() const;
  // Whether each user's own enroot configuration is read too (user_site_dir.h).
  bool reads_users() const;
  SiteLines lines_for(const std::string& partition) const;
  // A problem with a site file, logged the first time its key is seen: keys name the file,
  // line and kind of problem, never a value a user gave, so no user can fill the set or
  // hide a problem behind theirs. The message is cut to kMaxReportBytes, control
  // characters shown as '?' (a job's values may be in it).
  void report(const std::string& key, const std::string& message) const;
  void report(const std::string& problem) const { report(problem, problem); }

 private:
  void read_dir(const std::string& dir, bool enroot, SiteLines& out) const;
  void read_hooks(const std::string& dir, bool enroot, bool as_root, SiteLines& out) const;
  void report_unread(const std::string& dir) const;

  const std::vector<SiteDir> dirs_;
  mutable std::mutex mu_;
  mutable std::set<std::string> reported_;
};

}  // namespace crisp
