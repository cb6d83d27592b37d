#include "agent/host/work_cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/fd.h"
#include "common/strings.h"

namespace crisp {
namespace {

// Each directory from the root down to name's last part, parents first.
std::vector<std::string> dirs_down(const std::string& base, const std::string& name) {
  std::vector<std::string> out;
  std::string at = base;
  for (const std::string& part : split(name, '/')) {
    if (part.empty() || part == "." || part == "..") continue;
    at += "/" + part;
    out.push_back(at);
  }
  return out;
}

Status write_file(const std::string& path, const std::string& value) {
  Fd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd || write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size()))
    return fail("cannot write " + value + " to " + path + ": " + errno_text(errno));
  return Ok{};
}

}  // namespace

WorkCgroupPlan plan_work_cgroup(const std::string& root, bool unified, const WorkLimits& limits) {
  WorkCgroupPlan p;
  if (dirs_down(root, limits.name).empty()) return p;
  constexpr uint64_t kPeriodUs = 100000;
  auto quota = std::to_string(static_cast<uint64_t>(limits.cpus * kPeriodUs));
  std::string memory = std::to_string(limits.memory_bytes);
  if (unified) {
    p.dirs = dirs_down(root, limits.name);
    // v2 limits a group only where every parent hands its children the controller.
    p.writes.push_back({root + "/cgroup.subtree_control", "+cpu +memory"});
    for (size_t i = 0; i + 1 < p.dirs.size(); ++i) p.writes.push_back({p.dirs[i] + "/cgroup.subtree_control", "+cpu +memory"});
    p.writes.push_back({p.dirs.back() + "/cpu.max", quota + " " + std::to_string(kPeriodUs)});
    p.writes.push_back({p.dirs.back() + "/memory.max", memory});
    p.procs.push_back(p.dirs.back() + "/cgroup.procs");
    return p;
  }
  std::string cpu = dirs_down(root + "/cpu", limits.name).back(), mem = dirs_down(root + "/memory", limits.name).back();
  for (const char* h : {"cpu", "memory"}) {
    auto dirs = dirs_down(root + "/" + h, limits.name);
    p.dirs.insert(p.dirs.end(), dirs.begin(), dirs.end());
    p.procs.push_back(dirs.back() + "/cgroup.procs");
  }
  p.writes.push_back({cpu + "/cpu.cfs_period_us", std::to_string(kPeriodUs)});
  p.writes.push_back({cpu + "/cpu.cfs_quota_us", quota});
  p.writes.push_back({mem + "/memory.limit_in_bytes", memory});
  return p;
}

Result<WorkCgroup> WorkCgroup::make(const WorkLimits& limits, const std::string& root) {
  struct stat st {};
  bool unified = stat((root + "/cgroup.controllers").c_str(), &st) == 0;
  WorkCgroupPlan plan = plan_work_cgroup(root, unified, limits);
  WorkCgroup out;
  if (plan.procs.empty()) return out;
  for (const std::string& dir : plan.dirs)
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return fail("cannot create cgroup " + dir + ": " + errno_text(errno));
  for (const CgroupWrite& w : plan.writes)
    if (auto s = write_file(w.file, w.value); !s) return s.take_error();
  out.procs_ = std::move(plan.procs);
  return out;
}

bool WorkCgroup::enter() const {
  for (const std::string& procs : procs_) {
    int fd = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    bool ok = fd >= 0 && write(fd, "0", 1) == 1;
    if (fd >= 0) close(fd);
    if (!ok) return false;
  }
  return true;
}

}  // namespace crisp
