// --container-entrypoint: the image's entrypoint runs as the container's first
// process and execs its arguments, the holder; what it leaves (environment,
// output) is read back from the holder and the CRI log.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/result.h"

namespace crisp {

// Makes dir (the sandboxes' CRI log directory), where the CRI writes the entrypoint's output.
Status prepare_log_directory(const std::string& dir);

// Waits until pid runs the holder (runc's init, then any entrypoint, exec it);
// fails if it exits or takes longer than timeout.
Status await_holder(int pid, const std::string& holder_exe, std::chrono::seconds timeout);

// The environment of the holder (the entrypoint's, as it exec'd it).
Result<std::vector<std::string>> holder_environment(int pid);

// The messages of a CRI log file ("TIME STREAM TAG MESSAGE" lines), joined by newlines; the file is removed.
std::string read_cri_log(const std::string& path);

// Parses one CRI log line; false when it is not one.
bool parse_cri_log_line(const std::string& line, std::string& message);

}  // namespace crisp
