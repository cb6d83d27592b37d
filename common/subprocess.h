// Runs a helper program (a CDI hook, ldconfig) to completion: its streams are
// O_CLOEXEC pipes, so no other thread's child inherits them, and it gets no
// other descriptor; what it writes is captured (bounded); a deadline kills it.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"

namespace crisp {

struct ProcessSpec {
  std::string path;                               // the program; argv[0] when empty
  std::vector<std::string> argv;                  // argv[0] first
  std::optional<std::vector<std::string>> env;    // nullopt: crispd's own
  std::string input;                              // written to its stdin, then closed
  std::chrono::milliseconds timeout{30000};
  size_t max_output = 1 << 20;                    // per stream; the rest is read and dropped
  std::vector<int> pass_fds;                      // given to the program as its descriptors 3, 4, ...
  // The program is the first process of a PID namespace of its own: when it ends (or the
  // timeout kills it), so does everything it started, whatever it detached.
  bool own_pid_namespace = false;
  // Run in the child just before exec (a user's ids, a directory to start in):
  // system calls only (the child of a threaded process); false: it exits 127.
  std::function<bool()> prepare;
};

struct ProcessResult {
  int exit_code = -1;  // -1 when a signal ended it
  int signal = 0;
  std::string out, err;
  bool succeeded() const { return exit_code == 0; }
  // "exit status 3" or "signal 9".
  std::string status_text() const;
};

// argv/envp for exec: pointers into strings, then nullptr (strings must outlive them).
std::vector<char*> c_strings(std::vector<std::string>& strings);

// In a forked child, before exec (system calls only): fds become descriptors 3, 4, ...,
// inherited, and every other descriptor above 2 is closed.
bool only_descriptors_from_3(std::span<const int> fds);

// Errors: kFailed when it cannot start, kTimedOut when it outlived the timeout (it is killed).
Result<ProcessResult> run_process(const ProcessSpec& spec);

}  // namespace crisp
