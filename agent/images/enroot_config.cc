#include "agent/images/enroot_config.h"

#include "common/strings.h"

namespace crisp {
namespace {

bool env_name(const std::string& line, size_t eq) {
  if (eq == 0 || eq == std::string::npos) return false;
  for (size_t i = 0; i < eq; ++i) {
    char c = line[i];
    bool ok = c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

std::string without_cr(std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

}  // namespace

std::vector<std::string> parse_enroot_environment(const std::string& text) {
  std::vector<std::string> out;
  for (const std::string& raw : split(text, '\n')) {
    std::string line = without_cr(raw);
    if (env_name(line, line.find('='))) out.push_back(line);
    if (out.size() == kMaxImageEnv) break;
  }
  return out;
}

std::string parse_enroot_workdir(const std::string& rc) {
  const std::string head = "cd \"", tail = "\" && unset OLDPWD || exit 1";
  for (const std::string& raw : split(rc, '\n')) {
    std::string line = without_cr(raw);
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line.compare(start, head.size(), head) != 0 || !line.ends_with(tail)) continue;
    std::string dir = line.substr(start + head.size(), line.size() - tail.size() - start - head.size());
    if (!dir.empty() && dir.front() == '/' && dir.find('"') == std::string::npos) return dir;
  }
  return "";
}

}  // namespace crisp
