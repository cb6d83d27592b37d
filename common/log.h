// crispd's log: one line per event on stderr (journald adds time and unit).
#pragma once

#include <string>

namespace crisp {

enum class LogLevel { debug = 0, info = 1, warn = 2, error = 3 };

void set_log_level(LogLevel level);
bool parse_log_level(const std::string& name, LogLevel& out);
void log(LogLevel level, const std::string& message);

inline void log_debug(const std::string& m) { log(LogLevel::debug, m); }
inline void log_info(const std::string& m) { log(LogLevel::info, m); }
inline void log_warn(const std::string& m) { log(LogLevel::warn, m); }
inline void log_error(const std::string& m) { log(LogLevel::error, m); }

}  // namespace crisp
