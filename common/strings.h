// Small string helpers shared by the parsers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace crisp {

// Splits on sep; empty fields are kept so callers can reject them.
std::vector<std::string> split(std::string_view s, char sep);

std::string join(const std::vector<std::string>& parts, std::string_view sep);

bool starts_with(std::string_view s, std::string_view prefix);

// strerror() as a std::string, thread-safe.
std::string errno_text(int err);

}  // namespace crisp
