// SiteConfig: the container configuration an admin gives every container on the node,
// in enroot's file forms, from the directories crispd is pointed at:
//   crisp's own (--site-config, /etc/crisp):  mounts.d/*.fstab, environ.d/*.env, and the
//     same under partitions/NAME/ for the jobs of partition NAME alone; mounts read-only
//     unless "rw";
//   enroot's (--enroot-config, /etc/enroot):  its mounts.d and environ.d as enroot reads
//     them (mounts read-write unless "ro"), so a site that ran Pyxis keeps its files.
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
};

// A line of a site file and where it is ("/etc/crisp/mounts.d/10-fs.fstab:3").
struct SiteLine {
  std::string origin;
  std::string text;
  bool read_write_default = false;
};

// What applies to one job: its partition's lines after everyone's.
struct SiteLines {
  std::vector<SiteLine> mounts;
  std::vector<SiteLine> environ;  // one per file (text: the whole file)
};

inline constexpr size_t kMaxSiteFileBytes = 1 << 20;
inline constexpr size_t kMaxSiteFiles = 256;  // per directory
inline constexpr size_t kMaxReportBytes = 300;

class SiteConfig {
 public:
  explicit SiteConfig(std::vector<SiteDir> dirs) : dirs_(std::move(dirs)) {}

  // Whether any directory has partitions/ (then a job's partition is asked for).
  bool has_partitions() const;
  SiteLines lines_for(const std::string& partition) const;
  // A problem with a site file, logged the first time its key is seen: keys name the file,
  // line and kind of problem, never a value a user gave, so no user can fill the set or
  // hide a problem behind theirs. The message is cut to kMaxReportBytes, control
  // characters shown as '?' (a job's values may be in it).
  void report(const std::string& key, const std::string& message) const;
  void report(const std::string& problem) const { report(problem, problem); }

 private:
  void read_dir(const std::string& dir, bool read_write_default, SiteLines& out) const;
  void report_unread(const std::string& dir) const;

  const std::vector<SiteDir> dirs_;
  mutable std::mutex mu_;
  mutable std::set<std::string> reported_;
};

}  // namespace crisp
