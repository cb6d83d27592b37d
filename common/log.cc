#include "common/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>

namespace crisp {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::info)};
// "<N>" prefixes are read by journald as syslog priorities.
constexpr const char* kPrefix[] = {"<7>debug: ", "<6>info: ", "<4>warning: ", "<3>error: "};

}  // namespace

void set_log_level(LogLevel level) { g_level = static_cast<int>(level); }

bool parse_log_level(const std::string& name, LogLevel& out) {
  static const char* names[] = {"debug", "info", "warn", "error"};
  for (int i = 0; i < 4; ++i)
    if (name == names[i]) {
      out = static_cast<LogLevel>(i);
      return true;
    }
  return false;
}

void log(LogLevel level, const std::string& message) {
  if (static_cast<int>(level) < g_level) return;
  std::string line = std::string(kPrefix[static_cast<int>(level)]) + message + "\n";
  // One write per line keeps lines whole across threads.
  if (write(STDERR_FILENO, line.data(), line.size()) < 0) return;
}

}  // namespace crisp
