#include "agent/host/entrypoint.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <fstream>
#include <thread>

#include "common/files.h"
#include "common/strings.h"

namespace crisp {

Status prepare_log_directory(const std::string& dir) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return fail("cannot create " + dir + ": " + errno_text(errno));
  return Ok{};
}

Status await_holder(int pid, const std::string& holder_exe, std::chrono::seconds timeout) {
  std::string exe_link = "/proc/" + std::to_string(pid) + "/exe";
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    char exe[PATH_MAX];
    ssize_t n = readlink(exe_link.c_str(), exe, sizeof exe - 1);
    if (n < 0 && errno == ENOENT) return fail("exited before it ran the holder");
    if (n > 0 && std::string(exe, static_cast<size_t>(n)) == holder_exe) return Ok{};
    if (std::chrono::steady_clock::now() > deadline)
      return fail("did not run the holder within " + std::to_string(timeout.count()) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Result<std::vector<std::string>> holder_environment(int pid) {
  auto text = read_text("/proc/" + std::to_string(pid) + "/environ", 1u << 20);
  if (!text) return text.take_error();
  std::vector<std::string> env;
  for (std::string& kv : split(*text, '\0'))
    if (!kv.empty()) env.push_back(std::move(kv));
  return env;
}

bool parse_cri_log_line(const std::string& line, std::string& message) {
  // 2024-01-02T03:04:05.000000000Z stdout F text
  size_t a = line.find(' ');
  size_t b = a == std::string::npos ? a : line.find(' ', a + 1);
  size_t c = b == std::string::npos ? b : line.find(' ', b + 1);
  if (c == std::string::npos) return false;
  std::string stream = line.substr(a + 1, b - a - 1);
  if (stream != "stdout" && stream != "stderr") return false;
  message = line.substr(c + 1);
  return true;
}

std::string read_cri_log(const std::string& path) {
  // The entrypoint has written all it will (it runs the holder now), but the
  // shim copies its output to the file on its own time: wait until the size
  // holds still for 100 ms (at most 2 s).
  off_t last = -1;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (int still = 0; still < 10 && std::chrono::steady_clock::now() < deadline;) {
    struct stat st {};
    off_t size = stat(path.c_str(), &st) == 0 ? st.st_size : -1;
    still = size == last ? still + 1 : 0;
    last = size;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::ifstream f(path);
  std::string out, line, message;
  while (std::getline(f, line))
    if (parse_cri_log_line(line, message)) out += message + "\n";
  unlink(path.c_str());
  return out;
}

}  // namespace crisp
