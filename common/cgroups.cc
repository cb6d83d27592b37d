#include "common/cgroups.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "common/fd.h"
#include "common/files.h"
#include "common/strings.h"

namespace crisp {
namespace {

std::vector<pid_t> pids_in(const std::string& dir) {
  std::vector<pid_t> out;
  auto text = read_text(dir + "/cgroup.procs", 16u << 20);
  if (!text) return out;
  for (const std::string& line : split(*text, '\n'))
    if (!line.empty()) out.push_back(static_cast<pid_t>(std::strtol(line.c_str(), nullptr, 10)));
  return out;
}

Status move_all(const std::string& from, const std::string& to, pid_t except) {
  Fd procs(open((to + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
  if (!procs) return fail("cannot open " + to + "/cgroup.procs: " + errno_text(errno));
  // A process may fork while the others move: until none is left (or 20 rounds).
  for (int round = 0; round < 20; ++round) {
    std::vector<pid_t> pids = pids_in(from);
    pids.erase(std::remove(pids.begin(), pids.end(), except), pids.end());
    if (pids.empty()) return Ok{};
    for (pid_t pid : pids) {
      std::string text = std::to_string(pid);
      // ESRCH: it exited meanwhile.
      if (write(procs.get(), text.data(), text.size()) < 0 && errno != ESRCH)
        return fail("cannot move process " + text + " into " + to + ": " + errno_text(errno));
    }
  }
  return fail("the container's processes in " + from + " kept multiplying while they were moved");
}

}  // namespace

std::vector<CgroupOf> parse_proc_cgroup(std::string_view text) {
  std::vector<CgroupOf> out;
  for (const std::string& line : split(text, '\n')) {
    size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    out.push_back({line.substr(a + 1, b - a - 1), line.substr(b + 1)});
  }
  return out;
}

std::optional<std::string> slurm_cgroup_at(std::string_view path, SlurmLevel level) {
  const char* prefix = level == SlurmLevel::kStep ? "step_" : level == SlurmLevel::kJob ? "job_" : "uid_";
  std::string out;
  for (const std::string& part : split(path, '/')) {
    if (part.empty()) continue;
    out += "/" + part;
    if (starts_with(part, prefix)) return out;
  }
  return std::nullopt;
}

std::string hierarchy_dir(const std::string& controllers, const std::string& root) {
  std::string name = starts_with(controllers, "name=") ? controllers.substr(5) : controllers;
  return root + "/" + name;
}

Status adopt_container_processes(int holder_pid, SlurmLevel level) {
  auto mine = read_text("/proc/self/cgroup", 1 << 16);
  auto theirs = read_text("/proc/" + std::to_string(holder_pid) + "/cgroup", 1 << 16);
  if (!mine) return mine.take_error();
  if (!theirs) return fail("the container's holder " + std::to_string(holder_pid) + " is gone: " + theirs.error());
  // Slurm's path for this step, from any hierarchy the task is already in
  // (proctrack adds it to the freezer's only later): the same in each of Slurm's.
  std::optional<std::string> target;
  for (const CgroupOf& c : parse_proc_cgroup(*mine))
    if (!target && !c.controllers.empty()) target = slurm_cgroup_at(c.path, level);
  if (!target) return Ok{};  // no cgroups of Slurm's on this node
  for (const CgroupOf& h : parse_proc_cgroup(*theirs)) {
    if (h.controllers.empty() || h.path == *target) continue;
    std::string dir = hierarchy_dir(h.controllers);
    struct stat st {};
    if (stat((dir + *target).c_str(), &st) != 0) continue;  // a hierarchy Slurm does not use
    if (auto s = move_all(dir + h.path, dir + *target, holder_pid); !s) return s;
  }
  return Ok{};
}

std::vector<std::string> slurm_cgroup_dirs(uint32_t uid, uint32_t job_id, const std::string& root) {
  std::vector<std::string> out;
  std::string tail = "/uid_" + std::to_string(uid) + (job_id ? "/job_" + std::to_string(job_id) : "");
  for (const std::string& h : list_dir(root))
    for (const std::string& top : list_dir(root + "/" + h))
      if (starts_with(top, "slurm")) {
        std::string dir = root + "/" + h + "/" + top + tail;
        struct stat st {};
        if (stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) out.push_back(dir);
      }
  return out;
}

void kill_cgroup_processes(const std::string& dir) {
  for (int round = 0; round < 20; ++round) {
    std::vector<pid_t> pids = pids_in(dir);
    if (pids.empty()) return;
    for (pid_t pid : pids) kill(pid, SIGKILL);
    usleep(10000);
  }
}

}  // namespace crisp
