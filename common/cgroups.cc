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
  auto others = [&] {
    std::vector<pid_t> pids = pids_in(from);
    std::erase(pids, except);
    return pids;
  };
  // A process may fork while the others move: until none is left (or 20 rounds). One that is
  // exiting stays listed until its memory and files are freed, and the kernel moves it no more
  // (PF_EXITING): it runs nothing of its own again, so it may stay, once written (the write
  // moves the live threads of a leader that exited before them).
  std::vector<pid_t> pids = others();
  for (int round = 0; round < 20; ++round) {
    for (pid_t pid : pids) {
      std::string text = std::to_string(pid);
      // ESRCH: it exited meanwhile.
      if (write(procs.get(), text.data(), text.size()) < 0 && errno != ESRCH)
        return fail("cannot move process " + text + " into " + to + ": " + errno_text(errno));
    }
    pids = others();
    if (std::ranges::all_of(pids, process_exiting)) return Ok{};
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

namespace {

// "/a/b/c" -> {"a", "b", "c"}; "/" and "" -> {}.
std::vector<std::string> components(std::string_view path) {
  std::vector<std::string> out;
  for (std::string& part : split(path, '/'))
    if (!part.empty()) out.push_back(std::move(part));
  return out;
}

std::string joined(const std::vector<std::string>& parts, size_t n) {
  std::string out;
  for (size_t i = 0; i < n && i < parts.size(); ++i) out += "/" + parts[i];
  return out;
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string crisp_job_leaf(uint32_t job_id) { return "crisp_job_" + std::to_string(job_id); }

}  // namespace

std::optional<SlurmCgroup> slurm_cgroup_of(const CgroupOf& line) {
  std::vector<std::string> parts = components(line.path);
  SlurmCgroup out;
  out.own = joined(parts, parts.size());
  if (!line.controllers.empty()) {
    // slurm[_NODE], uid_U, job_J, step_S: a task below its step, slurmstepd in it.
    if (parts.size() < 4 || !starts_with(parts[0], "slurm") || !starts_with(parts[1], "uid_")) return std::nullopt;
    out.user = joined(parts, 2), out.job = joined(parts, 3), out.step = joined(parts, 4);
    return out;
  }
  out.v2 = true;
  auto scope = std::find_if(parts.begin(), parts.end(), [](const std::string& p) { return p.ends_with("slurmstepd.scope"); });
  auto depth = static_cast<size_t>(scope - parts.begin());
  // JOB, step_S and a leaf (slurm, or user/task_T) below the scope.
  if (scope == parts.end() || parts.size() < depth + 4) return std::nullopt;
  out.job = joined(parts, depth + 2), out.step = joined(parts, depth + 3);
  return out;
}

std::optional<std::string> adoption_target(const SlurmCgroup& c, SlurmLevel level, uint32_t job_id) {
  switch (level) {
    case SlurmLevel::kStep: return c.v2 ? c.own : c.step;
    case SlurmLevel::kJob: return c.v2 ? c.job + "/" + crisp_job_leaf(job_id) : c.job;
    case SlurmLevel::kUser: if (c.v2) return std::nullopt; return c.user;
  }
  return std::nullopt;
}

std::string hierarchy_dir(const std::string& controllers, const std::string& root) {
  std::string name = starts_with(controllers, "name=") ? controllers.substr(5) : controllers;
  return root + "/" + name;
}

std::string unified_dir(const std::string& root) {
  struct stat st {};
  return stat((root + "/cgroup.controllers").c_str(), &st) == 0 ? root : root + "/unified";
}

Status adopt_container_processes(int holder_pid, SlurmLevel level, uint32_t job_id) {
  auto mine = read_text("/proc/self/cgroup", 1 << 16);
  auto theirs = read_text("/proc/" + std::to_string(holder_pid) + "/cgroup", 1 << 16);
  if (!mine) return mine.take_error();
  if (!theirs) return fail("the container's holder " + std::to_string(holder_pid) + " is gone: " + theirs.error());
  // Slurm's place for this step on v1, from any hierarchy the task is already in (proctrack
  // adds it to the freezer's only later): the same path in each of Slurm's hierarchies.
  std::optional<SlurmCgroup> v1_at, v2_at;
  for (const CgroupOf& c : parse_proc_cgroup(*mine))
    if (auto at = slurm_cgroup_of(c)) {
      std::optional<SlurmCgroup>& first = at->v2 ? v2_at : v1_at;
      if (!first) first = std::move(at);
    }
  std::optional<std::string> v1 = v1_at ? adoption_target(*v1_at, level, job_id) : std::nullopt;
  std::optional<std::string> v2 = v2_at ? adoption_target(*v2_at, level, job_id) : std::nullopt;
  for (const CgroupOf& h : parse_proc_cgroup(*theirs)) {
    const std::optional<std::string>& target = h.controllers.empty() ? v2 : v1;
    if (!target || h.path == *target) continue;
    std::string dir = h.controllers.empty() ? unified_dir() : hierarchy_dir(h.controllers);
    // crisp's own leaf of the job (v2); elsewhere, a hierarchy Slurm does not use has no such directory.
    if (h.controllers.empty() && level == SlurmLevel::kJob && mkdir((dir + *target).c_str(), 0755) != 0 && errno != EEXIST)
      return fail("cannot make " + dir + *target + ": " + errno_text(errno));
    if (!is_directory(dir + *target)) continue;
    if (auto s = move_all(dir + h.path, dir + *target, holder_pid); !s) return s;
  }
  return Ok{};
}

namespace {

// Slurm's scopes on v2: /sys/fs/cgroup[/SLICE[/SLICE]]/[NODE_]slurmstepd.scope.
std::vector<std::string> slurmstepd_scopes(const std::string& dir, int slices_left) {
  std::vector<std::string> out;
  for (const std::string& e : list_dir(dir)) {
    std::string path = dir + "/" + e;
    if (e.ends_with("slurmstepd.scope") && is_directory(path)) out.push_back(path);
    else if (slices_left > 0 && e.ends_with(".slice") && is_directory(path))
      for (std::string& s : slurmstepd_scopes(path, slices_left - 1)) out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

std::vector<std::string> slurm_cgroup_dirs(uint32_t uid, uint32_t job_id, const std::string& root) {
  std::vector<std::string> out;
  std::string tail = "/uid_" + std::to_string(uid) + (job_id ? "/job_" + std::to_string(job_id) : "");
  for (const std::string& h : list_dir(root))
    for (const std::string& top : list_dir(root + "/" + h))
      if (starts_with(top, "slurm") && is_directory(root + "/" + h + "/" + top + tail))
        out.push_back(root + "/" + h + "/" + top + tail);
  if (job_id == 0) return out;
  for (const std::string& scope : slurmstepd_scopes(unified_dir(root), 3))
    for (const std::string& job : list_dir(scope))
      if (std::string leaf = scope + "/" + job + "/" + crisp_job_leaf(job_id); is_directory(leaf)) out.push_back(leaf);
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
