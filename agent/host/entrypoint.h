// --container-entrypoint: the image's entrypoint runs as the container's first
// process and execs its arguments, the holder; what it leaves (environment,
// output) is read back from the holder and the CRI log.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/result.h"

namespace crisp {

// Makes dir (the sandboxes' CRI log directory), where the CRI writes the
// entrypoint's output, a tmpfs of its own of size bytes: an entrypoint's
// output, however large, cannot fill /run.
Status prepare_log_directory(const std::string& dir, uint64_t size);

// Waits until pid runs the holder (runc's init, then any entrypoint, exec it);
// fails if it exits or takes longer than timeout. tick, if given, runs every
// 10 ms meanwhile.
Status await_holder(int pid, const std::string& holder_exe, std::chrono::seconds timeout,
                    const std::function<void()>& tick = {});

// An entrypoint's CRI log, kept small while the runtime writes it: past twice
// max_bytes the file is renamed, the runtime reopens a new one (reopen), and
// only the last max_bytes of the old are kept. Its end is what explains a failure.
class CriLogTail {
 public:
  CriLogTail(std::string path, size_t max_bytes, std::function<Status()> reopen)
      : path_(std::move(path)), max_(max_bytes), reopen_(std::move(reopen)) {}
  void rotate_if_large();
  // The messages of the last max_bytes written, the file's rest included.
  std::string messages();

 private:
  void keep(const std::string& raw);
  std::string path_;
  size_t max_;
  std::function<Status()> reopen_;
  std::string kept_;  // raw log lines already rotated away
};

// A squashfs image's /etc/rc (its rc.local, its entrypoint), which can run only once the
// file is the container's root: a process crispd starts inside the container
// (its mount namespace, its cgroups, its holder's streams, which the CRI logs),
// with the user's ids and no_new_privs, that execs argv: the entrypoint, then
// the holder's command line, as a registry image's entrypoint does.
struct RootEntrypoint {
  int holder_pid = 0;
  uint32_t uid = 0, gid = 0;
  std::vector<uint32_t> groups;
  std::vector<std::string> argv, env;
};
// Its pid (crispd's child: the caller reaps it).
Result<int> start_entrypoint_in_root(const RootEntrypoint& e);

// The environment of the holder (the entrypoint's, as it exec'd it).
Result<std::vector<std::string>> holder_environment(int pid);

// Points the log path at /dev/null for the CRI to reopen: what the
// container's processes write from then on is kept nowhere.
Status silence_cri_log(const std::string& path);

// The last lines of text, at most max_bytes, on one line: for an error message.
std::string last_lines(const std::string& text, size_t lines, size_t max_bytes);

// Parses one CRI log line; false when it is not one.
bool parse_cri_log_line(const std::string& line, std::string& message);

}  // namespace crisp
