// Runs a helper program (a CDI hook, ldconfig) to completion: its streams are
// O_CLOEXEC pipes, so no other thread's child inherits them, and it gets no
// other descriptor; what it writes is captured (bounded); a deadline kills it.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
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
  int pass_fd = -1;                               // given to the program as its descriptor 3
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

// In a forked child, before exec (system calls only): fd becomes descriptor 3, inherited,
// and every descriptor above 2 but that one is closed (fd < 0: every one above 2).
bool only_descriptor_3(int fd);

// Errors: kFailed when it cannot start, kTimedOut when it outlived the timeout (it is killed).
Result<ProcessResult> run_process(const ProcessSpec& spec);

}  // namespace crisp
