#include "spank/pmix_spool.h"

#include <unistd.h>

#include <vector>

#include "common/files.h"
#include "common/strings.h"

namespace crisp {
namespace {

// The inodes of the sockets process pid holds (its /proc/PID/fd links).
std::set<std::string> socket_inodes_of(pid_t pid) {
  std::set<std::string> out;
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  for (const std::string& fd : list_dir(dir)) {
    char link[64] = {};
    ssize_t n = readlink((dir + "/" + fd).c_str(), link, sizeof link - 1);
    if (auto inode = socket_inode(std::string_view(link, n > 0 ? static_cast<size_t>(n) : 0))) out.insert(*inode);
  }
  return out;
}

}  // namespace

std::optional<std::string> socket_inode(std::string_view link) {
  if (!starts_with(link, "socket:[") || link.back() != ']') return std::nullopt;
  return std::string(link.substr(8, link.size() - 9));
}

Result<std::string> spool_dir_in(const std::string& unix_table, const std::set<std::string>& held, uint32_t job_id,
                                 uint32_t step_id) {
  std::string suffix = "/stepd.slurm.pmix." + std::to_string(job_id) + "." + std::to_string(step_id);
  for (const std::string& line : split(unix_table, '\n')) {
    // Num RefCount Protocol Flags Type St Inode Path
    std::vector<std::string> f;
    for (const std::string& w : split(line, ' '))
      if (!w.empty()) f.push_back(w);
    if (f.size() < 8 || !held.count(f[6])) continue;
    const std::string& path = f[7];
    if (path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0)
      return path.substr(0, path.size() - suffix.size());
  }
  return fail("cannot find the step's PMIx server (no " + suffix.substr(1) + " socket of its slurmstepd)");
}

Result<std::string> pmix_spool_dir(uint32_t job_id, uint32_t step_id) {
  auto table = read_text("/proc/net/unix", 64u << 20);
  if (!table) return fail("cannot read /proc/net/unix: " + table.error());
  // Any user can bind a socket of that name; only the one slurmstepd (this
  // task's parent) holds is the step's PMIx server.
  return spool_dir_in(*table, socket_inodes_of(getppid()), job_id, step_id);
}

}  // namespace crisp
