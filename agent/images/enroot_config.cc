#include "agent/images/enroot_config.h"

#include <optional>

#include "common/env.h"
#include "common/strings.h"

namespace crisp {
namespace {

std::string without_cr(std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

}  // namespace

std::vector<std::string> parse_enroot_environment(const std::string& text) {
  std::vector<std::string> out;
  for (const std::string& raw : split(text, '\n')) {
    std::string line = without_cr(raw);
    size_t eq = line.find('=');
    if (eq != std::string::npos && valid_env_name(std::string_view(line).substr(0, eq))) out.push_back(line);
    if (out.size() == kMaxImageEnv) break;
  }
  return out;
}

std::string shell_quote(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<std::pair<std::string, std::string>> enroot_files(const EnrootImageConfig& config) {
  auto words = [](const std::vector<std::string>& list) {
    std::string out;
    for (const std::string& w : list) out += " " + shell_quote(w);
    return out;
  };
  std::string environment, fstab, rc;
  for (const std::string& e : config.env)
    if (e.find('\n') == std::string::npos) environment += e + "\n";
  for (const std::string& v : config.volumes)
    if (!v.empty() && v.front() == '/' && v.find_first_of(" \t\n") == std::string::npos)
      fstab += "${ENROOT_ROOTFS}" + v + " " + v + " none x-create=dir,bind,rw,nosuid,nodev\n";
  for (const auto& [key, value] : config.labels)
    if ((key + value).find('\n') == std::string::npos) rc += "# " + key + " " + value + "\n";
  if (!rc.empty()) rc += "\n";
  std::vector<std::string> cmd = config.entrypoint.empty() && config.cmd.empty() ? std::vector<std::string>{"/bin/sh"}
                                                                                 : config.cmd;
  std::string dir = config.working_dir.empty() || config.working_dir.find('"') != std::string::npos ? "/" : config.working_dir;
  rc += "mkdir -p \"" + dir + "\" 2> /dev/null\n"
        "cd \"" + dir + "\" && unset OLDPWD || exit 1\n\n"
        "if [ -s /etc/rc.local ]; then\n    . /etc/rc.local\nfi\n\n"
        "if [ $# -gt 0 ]; then\n    exec" + words(config.entrypoint) + " \"$@\"\n"
        "else\n    exec" + words(config.entrypoint) + words(cmd) + "\nfi\n";
  return {{"/etc/environment", environment},
          {"/etc/fstab", fstab},
          {"/etc/rc", rc},
          {"/etc/rc.local", "# This file is sourced by /etc/rc when the container starts.\n"
                            "# It can be used to manipulate the entrypoint or the command of the container.\n"}};
}

namespace {

// Shell words as @Q writes them: 'quoted', \x, $'ansi' pieces, joined; nullopt on anything else.
std::optional<std::vector<std::string>> shell_words(const std::string& text) {
  std::vector<std::string> words;
  size_t i = 0;
  auto ansi = [&](std::string& w) {
    for (++i; i < text.size() && text[i] != '\''; ++i) {
      if (text[i] != '\\' || i + 1 == text.size()) { w += text[i]; continue; }
      char c = text[++i];
      w += c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c == 'e' ? '\x1b' : c;
    }
    return i < text.size();
  };
  while (i < text.size()) {
    if (text[i] == ' ') { ++i; continue; }
    std::string w;
    for (; i < text.size() && text[i] != ' '; ++i) {
      if (text[i] == '\'') {
        size_t end = text.find('\'', i + 1);
        if (end == std::string::npos) return std::nullopt;
        w += text.substr(i + 1, end - i - 1);
        i = end;
      } else if (text[i] == '\\' && i + 1 < text.size()) {
        w += text[++i];
      } else if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i;
        if (!ansi(w)) return std::nullopt;
      } else if (text[i] == '"' || text[i] == '$' || text[i] == '`') {
        return std::nullopt;  // not @Q's output
      } else {
        w += text[i];
      }
    }
    words.push_back(w);
  }
  return words;
}

}  // namespace

std::vector<std::string> parse_enroot_entrypoint(const std::string& rc) {
  const std::string head = "exec ", tail = " \"$@\"";
  for (const std::string& raw : split(rc, '\n')) {
    std::string line = without_cr(raw);
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line.compare(start, head.size(), head) != 0) continue;
    if (line.substr(start) == "exec \"$@\"") return {};
    if (!line.ends_with(tail)) continue;
    auto words = shell_words(line.substr(start + head.size(), line.size() - tail.size() - start - head.size()));
    return words ? *words : std::vector<std::string>{};
  }
  return {};
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
