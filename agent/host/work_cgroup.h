// A cgroup of crisp's own for the heavy tools crispd runs outside any job
// (mksquashfs for crispctl import and --container-save): their CPU and memory
// bounded, so no user can load the node beyond what the admin allows, and
// no job's limits are theirs to spend. cgroup v1 (a group in the cpu and memory
// hierarchies) or v2 (one group, cpu.max and memory.max).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace crisp {

struct WorkLimits {
  std::string name = "crisp/squashfs";  // under each hierarchy's root; empty: no cgroup
  double cpus = 1.0;                    // CPU time, in cores
  uint64_t memory_bytes = 2ull << 30;
};

struct CgroupWrite {
  std::string file, value;
};

// What making the group takes, and where a process enters it (pure: tested on any layout).
struct WorkCgroupPlan {
  std::vector<std::string> dirs;     // made in this order (parents first)
  std::vector<CgroupWrite> writes;   // controllers for the children, then the limits
  std::vector<std::string> procs;    // the cgroup.procs files a process writes itself into
};

// unified: root is a cgroup v2 mount (root/cgroup.controllers exists).
WorkCgroupPlan plan_work_cgroup(const std::string& root, bool unified, const WorkLimits& limits);

class WorkCgroup {
 public:
  WorkCgroup() = default;
  // Makes the group under root (made or found); an error says why it cannot be.
  static Result<WorkCgroup> make(const WorkLimits& limits, const std::string& root = "/sys/fs/cgroup");
  // The calling process moves itself in: system calls only, for a forked child before exec.
  bool enter() const;
  bool empty() const { return procs_.empty(); }

 private:
  std::vector<std::string> procs_;
};

}  // namespace crisp
