#include "spank/remap_root.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "common/fd.h"
#include "common/strings.h"

namespace crisp {
namespace {

Status write_file(const std::string& path, const std::string& text) {
  Fd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return fail("cannot open " + path + ": " + errno_text(errno));
  if (write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    return fail("cannot write " + path + ": " + errno_text(errno));
  return Ok{};
}

// Keeps the task non-dumpable however the remap ends: until it execs, it
// holds slurmstepd's memory, which a process of the user's may not read.
struct NotDumpableAfter {
  ~NotDumpableAfter() { (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }
};

}  // namespace

Status remap_to_root(uint32_t uid, uint32_t gid) {
  // slurmstepd's setuid left the task non-dumpable, so its /proc files are
  // root's and it could not write its own maps: dumpable only while it does.
  NotDumpableAfter restore;
  if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) return fail("prctl(PR_SET_DUMPABLE): " + errno_text(errno));
  if (unshare(CLONE_NEWUSER) != 0)
    return fail("--container-remap-root needs unprivileged user namespaces, which this node does not allow (" +
                errno_text(errno) + "); run without it or ask your administrator");
  if (auto s = write_file("/proc/self/setgroups", "deny"); !s) return s;
  if (auto s = write_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1\n"); !s) return s;
  return write_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1\n");
}

}  // namespace crisp
